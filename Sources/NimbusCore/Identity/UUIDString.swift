import Foundation

/// Lower-case UUID strings, the form Nimbus uses for request and record identifiers.
public enum UUIDString {
    public static func random() -> String { UUID().uuidString.lowercased() }
}
