import Foundation

/// `GET` and `PUT /auth/1/profile`: what a user tells others about themselves. Others find a user by
/// email, phone number or user record name (CloudKit's `users/discover`) only once `discoverable` is on.
public struct AccountProfile: Codable, Sendable, Hashable {
    public var firstName: String?
    public var lastName: String?
    /// In international form, like `+44 20 7946 0958`; matched by its digits and a leading `+`.
    public var phoneNumber: String?
    public var discoverable: Bool

    public init(firstName: String? = nil, lastName: String? = nil, phoneNumber: String? = nil, discoverable: Bool = false) {
        self.firstName = firstName
        self.lastName = lastName
        self.phoneNumber = phoneNumber
        self.discoverable = discoverable
    }

    /// The number as stored and matched: its digits, after a `+` when it had one; nil when it has no digits.
    public static func normalizedPhoneNumber(_ number: String) -> String? {
        let digits = number.unicodeScalars.filter { ("0"..."9").contains($0) }
        guard !digits.isEmpty else { return nil }
        return (number.trimmingCharacters(in: .whitespaces).hasPrefix("+") ? "+" : "") + String(String.UnicodeScalarView(digits))
    }
}
