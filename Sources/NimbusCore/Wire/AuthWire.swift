import Foundation

/// `POST /auth/1/signup`.
public struct SignUpRequest: Codable, Sendable {
    public var email: String
    public var password: String
    public init(email: String, password: String) {
        self.email = email
        self.password = password
    }
}

public struct SignUpResponse: Codable, Sendable {
    public var userRecordName: String
    public init(userRecordName: String) { self.userRecordName = userRecordName }
}

/// `POST /auth/1/signin`: signs in and registers (or re-registers) the device.
public struct SignInRequest: Codable, Sendable {
    public var email: String
    public var password: String
    public var deviceName: String
    /// The device's id from an earlier sign-in, so it keeps its identity and watermarks.
    public var deviceID: String?
    public init(email: String, password: String, deviceName: String, deviceID: String? = nil) {
        self.email = email
        self.password = password
        self.deviceName = deviceName
        self.deviceID = deviceID
    }
}

public struct SignInResponse: Codable, Sendable {
    /// Shown once; the server keeps only its digest.
    public var sessionToken: String
    /// Milliseconds since 1970.
    public var expiresAt: Int64
    public var userRecordName: String
    public var deviceID: String
    public init(sessionToken: String, expiresAt: Int64, userRecordName: String, deviceID: String) {
        self.sessionToken = sessionToken
        self.expiresAt = expiresAt
        self.userRecordName = userRecordName
        self.deviceID = deviceID
    }
}

/// `GET /auth/1/me`.
public struct CallerResponse: Codable, Sendable {
    public var userRecordName: String
    public var email: String
    public var deviceID: String
    public var isAdministrator: Bool
    public init(userRecordName: String, email: String, deviceID: String, isAdministrator: Bool) {
        self.userRecordName = userRecordName
        self.email = email
        self.deviceID = deviceID
        self.isAdministrator = isAdministrator
    }
}

/// A device of the signed-in account, with what it has acknowledged (`GET /auth/1/devices`).
public struct DeviceStatus: Codable, Sendable, Hashable {
    public var deviceID: String
    public var name: String
    /// Milliseconds since 1970.
    public var lastSeen: Int64
    public var watermarks: [Watermark]
    public init(deviceID: String, name: String, lastSeen: Int64, watermarks: [Watermark]) {
        self.deviceID = deviceID
        self.name = name
        self.lastSeen = lastSeen
        self.watermarks = watermarks
    }

    /// "This device has applied zone Z up to sequence N", next to where the zone is now.
    public struct Watermark: Codable, Sendable, Hashable {
        public var zone: ZoneAddress
        public var appliedSequence: Int64
        public var currentSequence: Int64
        public init(zone: ZoneAddress, appliedSequence: Int64, currentSequence: Int64) {
            self.zone = zone
            self.appliedSequence = appliedSequence
            self.currentSequence = currentSequence
        }
    }
}

public struct DeviceList: Codable, Sendable {
    public var devices: [DeviceStatus]
    public init(devices: [DeviceStatus]) { self.devices = devices }
}

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
