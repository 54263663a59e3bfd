import Foundation

/// `POST /auth/1/signup`.
package struct SignUpRequest: Codable, Sendable {
    package var email: String
    package var password: String
    package init(email: String, password: String) {
        self.email = email
        self.password = password
    }
}

package struct SignUpResponse: Codable, Sendable {
    package var userRecordName: String
    package init(userRecordName: String) { self.userRecordName = userRecordName }
}

/// `POST /auth/1/signin`: signs in and registers (or re-registers) the device.
package struct SignInRequest: Codable, Sendable {
    package var email: String
    package var password: String
    package var deviceName: String
    /// The device's id from an earlier sign-in, so it keeps its identity and watermarks.
    package var deviceID: String?
    package init(email: String, password: String, deviceName: String, deviceID: String? = nil) {
        self.email = email
        self.password = password
        self.deviceName = deviceName
        self.deviceID = deviceID
    }
}

package struct SignInResponse: Codable, Sendable {
    /// Shown once; the server keeps only its digest.
    package var sessionToken: String
    /// Milliseconds since 1970.
    package var expiresAt: Int64
    package var userRecordName: String
    package var deviceID: String
    package init(sessionToken: String, expiresAt: Int64, userRecordName: String, deviceID: String) {
        self.sessionToken = sessionToken
        self.expiresAt = expiresAt
        self.userRecordName = userRecordName
        self.deviceID = deviceID
    }
}

/// `POST /auth/1/app-passwords`: a password for one program or device that signs in with HTTP Basic
/// (a WebDAV client), revocable on its own.
package struct AppPasswordRequest: Codable, Sendable {
    package var name: String
    /// Store Finder's own files (`._name`, `.DS_Store`) as documents; by default they are kept out of sync.
    package var keepFinderFiles: Bool?
    package init(name: String, keepFinderFiles: Bool? = nil) {
        self.name = name
        self.keepFinderFiles = keepFinderFiles
    }
}

/// An app password as the account's list shows it; `password` only in the answer that created it.
public struct AppPassword: Codable, Sendable, Hashable {
    /// The device the password signs in as: its versions and its place in the device list carry this ID.
    public var deviceID: String
    public var name: String
    /// Milliseconds since 1970.
    public var createdAt: Int64
    /// Shown once; the server keeps only its digest.
    public var password: String?
    /// The user name to send with it (the account's email).
    public var userName: String
    /// Whether Finder's own files (`._name`, `.DS_Store`) written with it are stored as documents (else they
    /// are kept out of sync).
    public var keepsFinderFiles: Bool

    public init(
        deviceID: String, name: String, createdAt: Int64, password: String? = nil, userName: String,
        keepsFinderFiles: Bool = false
    ) {
        self.deviceID = deviceID
        self.name = name
        self.createdAt = createdAt
        self.password = password
        self.userName = userName
        self.keepsFinderFiles = keepsFinderFiles
    }
}

package struct AppPasswordList: Codable, Sendable {
    package var appPasswords: [AppPassword]
    package init(appPasswords: [AppPassword]) { self.appPasswords = appPasswords }
}

/// `GET /auth/1/me`.
package struct CallerResponse: Codable, Sendable {
    package var userRecordName: String
    package var email: String
    package var deviceID: String
    package var isAdministrator: Bool
    package init(userRecordName: String, email: String, deviceID: String, isAdministrator: Bool) {
        self.userRecordName = userRecordName
        self.email = email
        self.deviceID = deviceID
        self.isAdministrator = isAdministrator
    }
}

/// A device of the signed-in account, with what it has acknowledged (`GET /auth/1/devices`).
package struct DeviceStatus: Codable, Sendable, Hashable {
    package var deviceID: String
    package var name: String
    /// Milliseconds since 1970.
    package var lastSeen: Int64
    package var watermarks: [Watermark]
    package init(deviceID: String, name: String, lastSeen: Int64, watermarks: [Watermark]) {
        self.deviceID = deviceID
        self.name = name
        self.lastSeen = lastSeen
        self.watermarks = watermarks
    }

    /// "This device has applied zone Z up to sequence N", next to where the zone is now.
    package struct Watermark: Codable, Sendable, Hashable {
        package var zone: ZoneAddress
        package var appliedSequence: Int64
        package var currentSequence: Int64
        package init(zone: ZoneAddress, appliedSequence: Int64, currentSequence: Int64) {
            self.zone = zone
            self.appliedSequence = appliedSequence
            self.currentSequence = currentSequence
        }
    }
}

package struct DeviceList: Codable, Sendable {
    package var devices: [DeviceStatus]
    package init(devices: [DeviceStatus]) { self.devices = devices }
}
