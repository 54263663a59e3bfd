import Foundation
import NimbusTesting

/// Valid JSON request bodies with one or two parts replaced by something a client should not send: wrong
/// types, edge numbers, odd strings, empty and nested containers, array elements repeated. Seeded, so a
/// fuzz round that fails repeats.
struct JSONMutator {
    /// What replaces a part, as JSON.
    static let oddities: [String] = [
        "null", "true", "0", "-1", "9223372036854775807", "-9223372036854775808", "1e308", "-0.0", "1.5", #""""#,
        "\"" + String(repeating: "x", count: 70_000) + "\"", #""../../etc""#, #""\u0000""#, #""😀""#, "[]", "{}", "[null]",
        #"{"value":null}"#, #""NaN""#, #""1e999""#, #""INT64_LIST""#, #""REFERENCE""#, #"{"latitude":"x"}"#,
        #"{"value":{"recordName":5}}"#,
    ]

    var random: SeededGenerator

    init(seed: UInt64) {
        random = SeededGenerator(seed: seed)
    }

    /// `json` with one or two of its parts replaced (or, for array elements, repeated up to 300 times).
    mutating func mutate(_ json: String) throws -> String {
        var body = try JSONSerialization.jsonObject(with: Data(json.utf8))
        for _ in 0...Int.random(in: 0...1, using: &random) {
            let paths = Self.paths(body)
            guard let path = paths.randomElement(using: &random) else { break }
            let repeatElement = path.last is Int && Bool.random(using: &random)
            let oddity = try JSONSerialization.jsonObject(
                with: Data(Self.oddities.randomElement(using: &random)!.utf8), options: .fragmentsAllowed)
            body = Self.replacing(
                body, at: path[...], with: oddity, copies: repeatElement ? Int.random(in: 2...300, using: &random) : 1)
        }
        return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }

    mutating func pick<T>(_ choices: [T]) -> T { choices.randomElement(using: &random)! }

    /// The paths to every part of a JSON value (keys and indexes).
    static func paths(_ value: Any, _ prefix: [AnyHashable] = []) -> [[AnyHashable]] {
        var found = prefix.isEmpty ? [] : [prefix]
        if let object = value as? [String: Any] {
            // In key order: dictionaries' own order changes from run to run, and the rounds must repeat.
            for (key, member) in object.sorted(by: { $0.key < $1.key }) { found += paths(member, prefix + [key]) }
        } else if let array = value as? [Any] {
            for (index, element) in array.enumerated() { found += paths(element, prefix + [index]) }
        }
        return found
    }

    /// `value` with the part at `path` replaced (or, for an array element, repeated `copies` times).
    static func replacing(_ value: Any, at path: ArraySlice<AnyHashable>, with replacement: Any, copies: Int) -> Any {
        guard let step = path.first else { return replacement }
        if var object = value as? [String: Any], let key = step as? String, let member = object[key] {
            object[key] = replacing(member, at: path.dropFirst(), with: replacement, copies: copies)
            return object
        }
        if var array = value as? [Any], let index = step as? Int {
            if path.count == 1, copies > 1 {
                array.insert(contentsOf: Array(repeating: array[index], count: copies - 1), at: index)
            } else {
                array[index] = replacing(array[index], at: path.dropFirst(), with: replacement, copies: copies)
            }
            return array
        }
        return value
    }
}
