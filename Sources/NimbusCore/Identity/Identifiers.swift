/// Validation of the developer-facing identifiers, with messages that say what a valid one looks like.
package enum Identifiers {
    /// A team ID: 10 upper-case letters or digits, like `98Z3R5XU29`.
    package static func validateTeamID(_ id: String) throws(NimbusError) {
        guard id.utf8.count == 10, id.utf8.allSatisfy({ (48...57).contains($0) || (65...90).contains($0) }) else {
            throw .badRequest("team ID \"\(id)\" must be 10 upper-case letters or digits, like 98Z3R5XU29")
        }
    }

    /// A bundle ID: reverse-DNS, at least two dot-separated parts of letters, digits, `-` and `_`.
    package static func validateBundleID(_ id: String) throws(NimbusError) {
        guard isReverseDNS(id, minimumParts: 2) else {
            throw .badRequest("bundle ID \"\(id)\" must be reverse-DNS, like com.example.Cloudy")
        }
    }

    /// A container identifier: `iCloud.` followed by a reverse-DNS name.
    package static func validateContainerID(_ id: String) throws(NimbusError) {
        guard id.hasPrefix("iCloud."), isReverseDNS(String(id.dropFirst(7)), minimumParts: 2) else {
            throw .badRequest("container identifier \"\(id)\" must look like iCloud.com.example.Cloudy")
        }
    }

    /// A key-value store identifier: `TEAMID.bundleID` by default, any reverse-DNS name otherwise.
    package static func validateStoreIdentifier(_ id: String) throws(NimbusError) {
        guard id.utf8.count <= 255, isReverseDNS(id, minimumParts: 2) else {
            throw .badRequest("key-value store identifier \"\(id)\" must look like 98Z3R5XU29.com.example.Cloudy")
        }
    }

    /// An email address, checked only for shape: something@something.
    package static func validateEmail(_ email: String) throws(NimbusError) {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
            !email.contains(where: \.isWhitespace), !containsControlCharacter(email)
        else {
            throw .badRequest("\"\(email)\" is not an email address")
        }
    }

    package static func validatePassword(_ password: String) throws(NimbusError) {
        // bcrypt reads at most 72 bytes; a longer password would be silently truncated.
        guard (8...72).contains(password.utf8.count) else {
            throw .badRequest("a password must be 8 to 72 bytes long")
        }
    }

    /// A record type or field name: a letter, then letters, digits and `_`, at most 255 bytes.
    package static func validateSchemaName(_ name: String, what: String) throws(NimbusError) {
        guard isSchemaName(name) else {
            throw .badRequest("\(what) \"\(name)\" must start with a letter and hold only letters, digits and _ (at most 255)")
        }
    }

    package static func isSchemaName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return (1...255).contains(bytes.count) && isLetter(bytes[0])
            && bytes.allSatisfy { isLetter($0) || (48...57).contains($0) || $0 == 95 }
    }

    /// A record name: 1 to 255 bytes without control characters.
    package static func validateRecordName(_ name: String) throws(NimbusError) {
        guard (1...255).contains(name.utf8.count), !containsControlCharacter(name) else {
            throw .badRequest("recordName must be 1 to 255 bytes without control characters")
        }
    }

    /// A subscription ID: 1 to 255 bytes without control characters, like a record name.
    package static func validateSubscriptionID(_ id: String) throws(NimbusError) {
        guard (1...255).contains(id.utf8.count), !containsControlCharacter(id) else {
            throw .badRequest("subscriptionID must be 1 to 255 bytes without control characters, and appear once per request")
        }
    }

    /// Whether the text holds a control character (Unicode's Cc: U+0000–U+001F and U+007F–U+009F),
    /// read from its UTF-8 bytes: every saved record's name passes here.
    package static func containsControlCharacter(_ text: String) -> Bool {
        var afterC2 = false
        for byte in text.utf8 {
            if byte < 0x20 || byte == 0x7F || (afterC2 && (0x80...0x9F).contains(byte)) { return true }
            afterC2 = byte == 0xC2
        }
        return false
    }

    /// A zone name: a letter or digit, then letters, digits, `_`, `-` and `.`, at most 255 bytes.
    package static func validateZoneName(_ name: String) throws(NimbusError) {
        let bytes = Array(name.utf8)
        guard (1...255).contains(bytes.count), isLetter(bytes[0]) || (48...57).contains(bytes[0]),
            bytes.allSatisfy({ isLetter($0) || (48...57).contains($0) || $0 == 95 || $0 == 45 || $0 == 46 })
        else {
            throw .badRequest("zone name \"\(name)\" must start with a letter or digit and hold only letters, digits, _, - and .")
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (65...90).contains(byte) || (97...122).contains(byte) }

    private static func isReverseDNS(_ value: String, minimumParts: Int) -> Bool {
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        return value.utf8.count <= 255 && parts.count >= minimumParts
            && parts.allSatisfy { part in
                !part.isEmpty
                    && part.utf8.allSatisfy { byte in
                        (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45
                            || byte == 95
                    }
            }
    }
}
