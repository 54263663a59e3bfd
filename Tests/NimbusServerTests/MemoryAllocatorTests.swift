import NimbusServer
import Testing

@Suite struct MemoryAllocatorTests {
    #if canImport(Glibc)
    @Test func glibcTakesTheThresholds() {
        #expect(MemoryAllocator.keepFreedMemory())
    }
    #endif
}
