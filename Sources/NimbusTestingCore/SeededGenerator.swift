import Foundation

/// A small deterministic random number generator (SplitMix64), for fuzz tests whose failing rounds must
/// repeat run to run.
public struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` pseudo-random bytes, eight from each draw, written straight into the buffer (a draw per byte,
    /// or an append per draw, made megabytes cost seconds of CPU in debug builds, which other tests running
    /// beside felt).
    public mutating func bytes(_ count: Int) -> Data {
        var data = Data(count: (count + 7) / 8 * 8)
        data.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for index in words.indices { words[index] = next().littleEndian }
        }
        return data.prefix(count)
    }
}
