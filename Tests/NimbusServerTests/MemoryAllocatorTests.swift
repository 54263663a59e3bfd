import NimbusServer
import NimbusTestingCore
import Testing

@Suite(.cleansUp) struct MemoryAllocatorTests {
    #if canImport(Glibc)
        @Test func glibcTakesTheThresholds() {
            #expect(MemoryAllocator.keepFreedMemory())
        }
    #endif
}
