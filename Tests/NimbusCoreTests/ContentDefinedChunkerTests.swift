import Foundation
import NimbusCore
import NimbusTestingCore
import Testing

@Suite struct ContentDefinedChunkerTests {
    let chunker = ContentDefinedChunker.standard

    static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        return Array(generator.bytes(count))
    }

    static func chunks(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var offset = 0
        return lengths(bytes).map { length in
            defer { offset += length }
            return bytes[offset..<offset + length]
        }
    }

    static func lengths(_ bytes: [UInt8]) -> [Int] {
        bytes.withUnsafeBytes { ContentDefinedChunker.standard.chunkLengths(of: $0) }
    }

    @Test func chunksKeepTheirSizesAndAverageNearTheTarget() async throws {
        let (bytes, lengths) = try await onOwnThread {
            let bytes = Self.randomBytes(48 << 20, seed: 1)
            return (bytes, Self.lengths(bytes))
        }
        #expect(lengths.reduce(0, +) == bytes.count)
        #expect(lengths.dropLast().allSatisfy { (chunker.minimumSize...chunker.maximumSize).contains($0) })
        let average = bytes.count / lengths.count
        #expect((768 << 10...1_536 << 10).contains(average), "average chunk \(average) bytes")
    }

    @Test func smallAndUniformFilesAreCutWithinTheLimits() async throws {
        #expect(Self.lengths([]).isEmpty)
        #expect(Self.lengths([UInt8](repeating: 7, count: 1000)) == [1000])
        let zeros = [UInt8](repeating: 0, count: 10 << 20)
        let lengths = try await onOwnThread { Self.lengths(zeros) }
        #expect(lengths.reduce(0, +) == zeros.count && lengths.allSatisfy { $0 <= chunker.maximumSize })
    }

    /// A one-byte change, or bytes inserted, in the middle of a large file changes at most the two chunks
    /// around it; every chunk after them is the same bytes as before.
    @Test(arguments: [false, true]) func anEditChangesOnlyTheChunksAroundIt(inserting: Bool) async throws {
        let changed = try await onOwnThread {
            let original = Self.randomBytes(24 << 20, seed: 2)
            var edited = original
            if inserting {
                edited.insert(contentsOf: [1, 2, 3, 4, 5], at: original.count / 2)
            } else {
                edited[original.count / 2] ^= 0xFF
            }
            let before = Set(Self.chunks(original).map { Array($0) })
            return Self.chunks(edited).map { Array($0) }.filter { !before.contains($0) }
        }
        #expect((1...2).contains(changed.count), "\(changed.count) chunks changed")
    }

    /// Boundaries are part of the storage format: every client and server must cut the same bytes at the
    /// same places, release after release.
    @Test func boundariesAreStableAcrossReleases() async throws {
        let lengths = try await onOwnThread { Self.lengths(Self.randomBytes(8 << 20, seed: 3)) }
        #expect(lengths == [779_387, 1_090_998, 1_003_874, 1_430_248, 1_209_121, 1_610_607, 1_119_385, 144_988])
    }
}
