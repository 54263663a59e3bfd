/// Splits a file's bytes into chunks whose boundaries depend on the bytes around them, not on their
/// offsets (FastCDC: a gear rolling hash, normalised chunking and cut-point skipping), so an edit
/// moves only the boundaries near it and a small change to a large file re-sends one or two chunks.
///
/// Sizes: at least 256 KiB, 1 MiB on average, at most 4 MiB. Every chunk costs a row, a file in the
/// blob store and a request on the wire, so chunks much smaller than that would make a 256 MB file
/// thousands of requests; larger ones would make a one-byte edit re-send several megabytes. A file
/// smaller than the minimum is one chunk.
///
/// The boundaries are part of the storage format: a different gear table or size would split every
/// existing file differently and store it twice. Change them only with a new format version.
public struct ContentDefinedChunker: Sendable {
    public let minimumSize: Int
    public let averageSize: Int
    public let maximumSize: Int
    /// Before the average size a boundary needs more zero bits (rarer), after it fewer (more common):
    /// chunk sizes gather around the average instead of spreading exponentially.
    private let strictMask: UInt64
    private let looseMask: UInt64

    public static let standard = ContentDefinedChunker(minimumSize: 256 << 10, averageSize: 1 << 20, maximumSize: 4 << 20)

    /// `averageSize` must be a power of two between `minimumSize` and `maximumSize`.
    public init(minimumSize: Int, averageSize: Int, maximumSize: Int) {
        precondition(averageSize.nonzeroBitCount == 1 && minimumSize < averageSize && averageSize < maximumSize)
        self.minimumSize = minimumSize
        self.averageSize = averageSize
        self.maximumSize = maximumSize
        let bits = averageSize.trailingZeroBitCount
        // A gear hash shifts left, so its high bits depend on the most bytes: the masks take those.
        strictMask = Self.highBits(bits + 2)
        looseMask = Self.highBits(bits - 2)
    }

    /// The length of the chunk that starts at the beginning of `bytes`. `bytes` holds the rest of the
    /// file or at least `maximumSize` bytes of it.
    public func nextChunkLength(in bytes: UnsafeRawBufferPointer) -> Int {
        let count = bytes.count
        if count <= minimumSize { return count }
        let end = min(count, maximumSize)
        let middle = min(end, averageSize)
        var hash: UInt64 = 0
        var index = minimumSize
        let gear = Self.gear
        while index < middle {
            hash = (hash << 1) &+ gear[Int(bytes[index])]
            if hash & strictMask == 0 { return index + 1 }
            index += 1
        }
        while index < end {
            hash = (hash << 1) &+ gear[Int(bytes[index])]
            if hash & looseMask == 0 { return index + 1 }
            index += 1
        }
        return end
    }

    /// The lengths of the chunks of `bytes`, a whole file held in memory.
    public func chunkLengths(of bytes: UnsafeRawBufferPointer) -> [Int] {
        var lengths: [Int] = []
        var offset = 0
        while offset < bytes.count {
            let length = nextChunkLength(in: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            lengths.append(length)
            offset += length
        }
        return lengths
    }

    private static func highBits(_ count: Int) -> UInt64 { ~UInt64(0) << UInt64(64 - count) }

    /// 256 fixed pseudo-random words (SplitMix64 from a fixed seed): the same table on every machine,
    /// forever, so every client and server cut a file at the same places.
    private static let gear: [UInt64] = {
        var state: UInt64 = 0x4E49_4D42_5553_4344  // "NIMBUSCD"
        return (0..<256).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }()
}
