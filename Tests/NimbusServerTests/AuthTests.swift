import Foundation
import NIOHTTP1
import NimbusCore
import NimbusKit
import NimbusServer
import NimbusTesting
import Testing

@Suite(.cleansUp) struct AuthTests {
    @Test func signUpSignInAndSignOut() async throws {
        let server = try await TestServer.start()
        let session = try await server.signIn(email: "ann@example.com", device: "Ann's phone")
        #expect(session.userRecordName.hasPrefix("_") && session.userRecordName.count == 33)

        let me = try await server.request(.GET, "/auth/1/me", session: session)
        #expect(me.status == 200)
        #expect(try me.decode(CallerResponse.self).deviceID == session.deviceID)

        #expect(try await server.request(.POST, "/auth/1/signout", session: session).status == 204)
        let after = try await server.request(.GET, "/auth/1/me", session: session)
        #expect(after.status == 401)
        #expect(after.errorCode == .authenticationFailed)
    }

    @Test func passwordsAreStoredAsBcryptHashes() async throws {
        let server = try await TestServer.start()
        _ = try await server.signIn(email: "ann@example.com", device: "phone")
        let account = try #require(try await server.store.account(email: "ann@example.com"))
        #expect(account.passwordHash.hasPrefix("$2"))
        #expect(!account.passwordHash.contains(TestServer.password))
    }

    @Test func wrongPasswordsAndUnknownEmailsFailAlike() async throws {
        let server = try await TestServer.start()
        _ = try await server.signIn(email: "ann@example.com", device: "phone")
        for (email, password) in [("ann@example.com", "wrong password"), ("nobody@example.com", TestServer.password)] {
            let response = try await server.request(
                .POST, "/auth/1/signin", json: #"{"email":"\#(email)","password":"\#(password)","deviceName":"x"}"#)
            #expect(response.status == 401)
            #expect(response.errorCode == .authenticationFailed)
            #expect(response.error?.reason == "the email or password is wrong")
        }
    }

    @Test func signingUpTwiceIsRefused() async throws {
        let server = try await TestServer.start()
        _ = try await server.signIn(email: "ann@example.com", device: "phone")
        let response = try await server.request(
            .POST, "/auth/1/signup", json: #"{"email":"ANN@example.com","password":"another password"}"#)
        #expect(response.status == 409)
        #expect(response.errorCode == .exists)
    }

    @Test func expiredSessionsAreRefused() async throws {
        let server = try await TestServer.start { $0.sessionLifetime = .seconds(3600) }
        let session = try await server.signIn(email: "ann@example.com", device: "phone")
        #expect(try await server.request(.GET, "/auth/1/me", session: session).status == 200)
        server.clock.advance(by: 3601)
        let response = try await server.request(.GET, "/auth/1/me", session: session)
        #expect(response.status == 401)
        #expect(response.errorCode == .authenticationFailed)
        #expect(response.error?.reason.contains("expired") == true)
    }

    @Test func aDeviceKeepsItsIdentityAcrossSignIns() async throws {
        let server = try await TestServer.start()
        let first = try await server.signIn(email: "ann@example.com", device: "phone")
        let again = try await server.signIn(email: "ann@example.com", device: "phone (renamed)", deviceID: first.deviceID)
        #expect(again.deviceID == first.deviceID)
        let bob = try await server.signIn(email: "bob@example.com", device: "laptop", deviceID: first.deviceID)
        #expect(bob.deviceID != first.deviceID)
        let devices = try await server.request(.GET, "/auth/1/devices", session: again).decode(DeviceList.self)
        #expect(devices.devices.map(\.name) == ["phone (renamed)"])
    }

    @Test func signInAttemptsAreRateLimitedPerEmail() async throws {
        let server = try await TestServer.start { $0.signInRateLimit = RateLimitFixture.tight }
        var statuses = [Int]()
        for _ in 0..<4 {
            statuses.append(
                try await server.request(
                    .POST, "/auth/1/signin", json: #"{"email":"ann@example.com","password":"guessing!","deviceName":"x"}"#
                ).status)
        }
        #expect(statuses == [401, 401, 401, 429])
    }

    @Test(arguments: [
        #"{"email":"not-an-email","password":"long enough"}"#,
        #"{"email":"a@b.c","password":"short"}"#,
        #"{"email":"a@b.c"}"#,
        #"{"email":5,"password":"long enough"}"#,
        #"{"email":"a@b.c","password":"long enough""#,
        "",
    ])
    func malformedSignUpsAreBadRequests(_ body: String) async throws {
        let server = try await TestServer.start()
        let response = try await server.request(.POST, "/auth/1/signup", json: body)
        #expect(response.status == 400)
        #expect(response.errorCode == .badRequest)
        #expect(try await server.store.accounts().isEmpty)
    }
}

enum RateLimitFixture {
    /// Three requests, then nothing for a minute.
    static let tight = RateLimit(perSecond: 1.0 / 60, burst: 3)
}
