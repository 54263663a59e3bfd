import Foundation
import Hummingbird
import NimbusCore
import NimbusStore

/// People and their devices and key-value stores: administrators see every user; everyone their own.
struct UserPages {
    let server: ServerState

    func register(on router: RouterGroup<DashboardRequestContext>, viewer: @escaping DashboardViewerLoader) {
        router.get("users") { request, context in
            let viewer = try await viewer(context)
            try viewer.requireAdministrator()
            let users = try await server.store.accounts().map {
                UsersPageModel.UserRow(
                    email: $0.email, userRecordName: $0.id, isAdministrator: $0.isAdministrator,
                    link: "/dashboard/users/" + DashboardLinks.encoded($0.id),
                    created: ISO8601DateFormatter().string(from: $0.createdAt))
            }
            return DashboardRenderer.shared.page(
                "users",
                UsersPageModel(
                    chrome: DashboardChrome(
                        title: "Users", viewer: viewer, section: "users", notice: DashboardNotice.message(in: request.uri)),
                    users: users))
        }
        router.get("users/:user") { request, context in
            let viewer = try await viewer(context)
            let user = try context.parameters.require("user")
            try viewer.requireAccess(toUser: user)
            return DashboardRenderer.shared.page(
                "user", try await userPage(viewer, user: user, notice: DashboardNotice.message(in: request.uri)))
        }
        router.post("users/:user/devices/:device/revoke") { request, context in
            let viewer = try await viewer(context)
            let user = try context.parameters.require("user")
            try viewer.requireAccess(toUser: user)
            let device = try context.parameters.require("device")
            _ = try await DashboardForm.read(request)
            return try await DashboardSubmission.run(
                request,
                done: "/dashboard/users/" + DashboardLinks.encoded(user) + "?notice=" + DashboardNotice.deviceRevoked.rawValue
            ) {
                guard try await AuthService(server: server).signOut(deviceID: device, of: user) else {
                    throw NimbusError.notFound("the user has no device \(device)")
                }
            } failed: { error, status in
                var model = try await userPage(viewer, user: user, notice: nil)
                model.chrome.error = error
                return DashboardRenderer.shared.page("user", model, status: status)
            }
        }
        router.post("users/:user/app-passwords") { request, context in
            let viewer = try await viewer(context)
            let user = try context.parameters.require("user")
            let form = try await DashboardForm.read(request)
            // An app password signs in as its owner: only they make one, never an administrator for them.
            guard viewer.account.id == user else {
                throw NimbusError.accessDenied("only a user creates their own app passwords")
            }
            do {
                let created = try await AuthService(server: server).createAppPassword(
                    viewer.session,
                    AppPasswordRequest(name: form.trimmed("name") ?? "", keepFinderFiles: form.isChecked("keepFinderFiles")))
                var model = try await userPage(viewer, user: user, notice: nil)
                let base = PublicURL.base(
                    for: request, configured: server.configuration.publicURL, tls: server.configuration.tls != nil)
                model.createdAppPassword = UserPageModel.CreatedAppPassword(
                    name: created.name, userName: created.userName, password: created.password ?? "", webDAV: base + "/dav/")
                return DashboardRenderer.shared.page("user", model)
            } catch let error as NimbusError where error.code == .badRequest {
                var model = try await userPage(viewer, user: user, notice: nil)
                model.chrome.error = error.reason
                return DashboardRenderer.shared.page("user", model, status: .badRequest)
            }
        }
        router.get("keyvalue") { request, context in
            let viewer = try await viewer(context)
            let user = request.uri.queryParameters.get("user") ?? viewer.account.id
            try viewer.requireAccess(toUser: user)
            return DashboardRenderer.shared.page("keyvalue", try await keyValuePage(viewer, user: user))
        }
    }

    private func userPage(_ viewer: DashboardViewer, user: String, notice: String?) async throws -> UserPageModel {
        guard let account = try await server.store.account(id: user) else { throw NimbusError.notFound("no such page") }
        let now = server.configuration.now()
        let devices = try await AuthService(server: server).devices(accountID: user).devices.map { device in
            let pending = device.watermarks.reduce(Int64(0)) { $0 + max(0, $1.currentSequence - $1.appliedSequence) }
            return UserPageModel.DeviceRow(
                name: device.name, deviceID: device.deviceID,
                lastSeen: ISO8601DateFormatter().string(from: Date(milliseconds: device.lastSeen)),
                lastSeenAgo: Self.ago(now.timeIntervalSince(Date(milliseconds: device.lastSeen))),
                zones: device.watermarks.map {
                    UserPageModel.ZoneRow(
                        zone: $0.zone.description, applied: $0.appliedSequence, current: $0.currentSequence,
                        pending: max(0, $0.currentSequence - $0.appliedSequence))
                },
                pendingChanges: pending,
                revokeAction:
                    "/dashboard/users/\(DashboardLinks.encoded(user))/devices/\(DashboardLinks.encoded(device.deviceID))/revoke",
                isThisBrowser: device.deviceID == viewer.session.deviceID,
                isAppPassword: device.deviceID.hasPrefix(AuthService.appPasswordDevicePrefix))
        }
        return UserPageModel(
            chrome: DashboardChrome(
                title: account.email, viewer: viewer, section: viewer.account.id == user ? "" : "users", notice: notice),
            email: account.email, userRecordName: account.id, isAdministrator: account.isAdministrator, devices: devices,
            keyValueLink: "/dashboard/keyvalue?user=" + DashboardLinks.encoded(user),
            appPasswordAction: viewer.account.id == user
                ? "/dashboard/users/\(DashboardLinks.encoded(user))/app-passwords" : nil)
    }

    private func keyValuePage(_ viewer: DashboardViewer, user: String) async throws -> KeyValuePageModel {
        guard let account = try await server.store.account(id: user) else { throw NimbusError.notFound("no such page") }
        let limits = KeyValueLimits.iCloud
        var stores = [KeyValuePageModel.StoreModel]()
        for zone in try await server.store.zones(accountID: user, service: .keyValue) {
            let key = ZoneKey(accountID: user, address: ZoneAddress(service: .keyValue, name: zone.name))
            let snapshot = try await KeyValueService(server: server).snapshot(key)
            let entries = snapshot.values.sorted { $0.key < $1.key }.map { key, value in
                KeyValuePageModel.EntryModel(key: key, value: Self.text(value), type: value.typeName, bytes: value.byteSize)
            }
            let total = entries.reduce(0) { $0 + $1.bytes }
            stores.append(
                KeyValuePageModel.StoreModel(
                    identifier: zone.name, entries: entries, keyCount: entries.count, maxKeys: limits.maxKeys, totalBytes: total,
                    maxTotalBytes: limits.maxTotalBytes))
        }
        return KeyValuePageModel(
            chrome: DashboardChrome(title: "Key-value stores of \(account.email)", viewer: viewer, section: "keyvalue"),
            stores: stores, isEmpty: stores.isEmpty)
    }

    private static func text(_ value: KeyValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return text.count > 500 ? String(text.prefix(500)) + "…" : text
    }

    static func ago(_ seconds: TimeInterval) -> String {
        switch seconds {
        case ..<60: "just now"
        case ..<3600: "\(Int(seconds / 60)) min ago"
        case ..<86400: "\(Int(seconds / 3600)) h ago"
        default: "\(Int(seconds / 86400)) days ago"
        }
    }
}

struct UsersPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var users: [UserRow]

    struct UserRow: Sendable {
        var email: String
        var userRecordName: String
        var isAdministrator: Bool
        var link: String
        var created: String
    }
}

struct UserPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var email: String
    var userRecordName: String
    var isAdministrator: Bool
    var devices: [DeviceRow]
    var keyValueLink: String
    /// Where the user's own page creates app passwords (nil on someone else's page).
    var appPasswordAction: String?
    /// An app password just created: shown on this page once, never again.
    var createdAppPassword: CreatedAppPassword?

    struct CreatedAppPassword: Sendable {
        var name: String
        var userName: String
        var password: String
        var webDAV: String
    }

    struct DeviceRow: Sendable {
        var name: String
        var deviceID: String
        var lastSeen: String
        var lastSeenAgo: String
        var zones: [ZoneRow]
        var pendingChanges: Int64
        var revokeAction: String
        var isThisBrowser: Bool
        var isAppPassword: Bool
    }

    struct ZoneRow: Sendable {
        var zone: String
        var applied: Int64
        var current: Int64
        var pending: Int64
    }
}

struct KeyValuePageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var stores: [StoreModel]
    var isEmpty: Bool

    struct StoreModel: Sendable {
        var identifier: String
        var entries: [EntryModel]
        var keyCount: Int
        var maxKeys: Int
        var totalBytes: Int
        var maxTotalBytes: Int
    }

    struct EntryModel: Sendable {
        var key: String
        var value: String
        var type: String
        var bytes: Int
    }
}
