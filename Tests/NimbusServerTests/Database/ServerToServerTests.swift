import Crypto
import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Server-to-server keys: requests signed as CloudKit's are act as the key's creator in the public database.
@Suite(.cleansUp) struct ServerToServerTests {
    struct Signed {
        let fixture: DatabaseFixture
        let keyID: String
        let key: P256.Signing.PrivateKey

        func post(
            _ operation: String, _ json: String, database: String = "public", date: Date = Date(),
            signer: P256.Signing.PrivateKey? = nil
        )
            async throws -> RawResponse
        {
            let path = "/database/1/\(fixture.app.container)/development/\(database)/\(operation)"
            let body = Data(json.utf8)
            let headers = try RequestSignature.sign(path: path, body: body, keyID: keyID, privateKey: signer ?? key, date: date)
            return try await fixture.server.request(.POST, path, headers: headers, body: body)
        }
    }

    static func make() async throws -> (Signed, admin: NimbusSession) {
        let fixture = try await DatabaseFixture.make()
        let admin = try await fixture.server.signInAdministrator()
        let key = P256.Signing.PrivateKey()
        let info: ServerKeyInfo = try await NimbusClient(session: admin, apiToken: nil).send(
            .POST, "/admin/1/keys",
            body: CreateServerKeyRequest(container: fixture.app.container, publicKey: key.publicKey.pemRepresentation))
        #expect(info.keyID.count == 64 && info.creator == admin.userRecordName)
        return (Signed(fixture: fixture, keyID: info.keyID, key: key), admin)
    }

    @Test func signedRequestsActAsTheKeysCreatorInThePublicDatabase() async throws {
        let (signed, admin) = try await Self.make()
        let server = signed.fixture.server
        let create =
            #"{"operations":[{"operationType":"create","record":{"recordName":"news","recordType":"Announcements","fields":{"text":{"value":"hi"}}}}]}"#
        let saved = try await signed.post("records/modify", create)
        #expect(saved.status == 200, "\(String(decoding: saved.body, as: UTF8.self))")
        let record = try saved.decode(RecordsResponse.self).records.first?.record
        #expect(record?.created?.userRecordName == admin.userRecordName)
        let query = try await signed.post("records/query", #"{"query":{"recordType":"Announcements"}}"#)
        #expect(try query.decode(RecordsQueryResponse.self).records.count == 1)
        // Users see what the server wrote.
        let users = try await signed.fixture.post(
            "records/query", #"{"query":{"recordType":"Announcements"}}"#, database: "public", anonymous: true)
        #expect(try users.decode(RecordsQueryResponse.self).records.names == ["news"])
    }

    @Test func badSignaturesStaleDatesAndPrivateDatabasesAreRefused() async throws {
        let (signed, admin) = try await Self.make()
        let server = signed.fixture.server
        let query = #"{"query":{"recordType":"Announcements"}}"#
        #expect(
            try await signed.post("records/query", query, signer: P256.Signing.PrivateKey()).errorCode == .authenticationFailed)
        #expect(
            try await signed.post("records/query", query, date: Date().addingTimeInterval(-3600)).errorCode
                == .authenticationFailed)
        #expect(try await signed.post("records/query", query, database: "private").errorCode == .accessDenied)

        // A body changed after signing no longer verifies.
        let path = "/database/1/\(signed.fixture.app.container)/development/public/records/query"
        var headers = try RequestSignature.sign(path: path, body: Data(query.utf8), keyID: signed.keyID, privateKey: signed.key)
        let tampered = try await signed.fixture.server.request(
            .POST, path, headers: headers, body: Data(#"{"query":{"recordType":"Other"}}"#.utf8))
        #expect(tampered.errorCode == .authenticationFailed)
        headers.append(("X-Nimbus-API-Token", signed.fixture.app.apiToken))
        #expect(
            try await signed.fixture.server.request(.POST, path, headers: headers, body: Data(query.utf8)).errorCode
                == .authenticationFailed)

        try await NimbusClient(session: admin, apiToken: nil).send(.DELETE, "/admin/1/keys/\(signed.keyID)")
        #expect(try await signed.post("records/query", query).errorCode == .authenticationFailed)
        let notPEM = try await signed.fixture.server.request(
            .POST, "/admin/1/keys", session: admin, json: #"{"container":"\#(signed.fixture.app.container)","publicKey":"nope"}"#)
        #expect(notPEM.errorCode == .badRequest)
    }

    /// Clients sign a request without a body either with the hash of the empty body or with an empty hash
    /// field; both verify, and neither lets a body be added afterwards.
    @Test func bodilessRequestsVerifyWithEitherFormOfTheBodysHash() async throws {
        let (signed, _) = try await Self.make()
        let fixture = signed.fixture
        let path = "/database/1/\(fixture.app.container)/development/public/zones/list"
        let date = RequestSignature.format(Date())
        func headers(_ message: String) throws -> [(String, String)] {
            let signature = try signed.key.signature(for: Data(message.utf8)).derRepresentation.base64EncodedString()
            return [
                (RequestSignature.keyIDHeader, signed.keyID), (RequestSignature.dateHeader, date),
                (RequestSignature.signatureHeader, signature),
            ]
        }
        let emptyHash = Data(SHA256.hash(data: Data())).base64EncodedString()
        do {
            #expect(
                try await fixture.server.request(.GET, path, headers: try headers("\(date):\(emptyHash):\(path)")).status == 200)
            #expect(try await fixture.server.request(.GET, path, headers: try headers("\(date)::\(path)")).status == 200)
            let withBody = try await fixture.server.request(
                .POST, path, headers: try headers("\(date)::\(path)"), body: Data("{}".utf8))
            #expect(withBody.errorCode == .authenticationFailed)
            let otherPath = try await fixture.server.request(.GET, path, headers: try headers("\(date)::/database/1/other"))
            #expect(otherPath.errorCode == .authenticationFailed)
        } catch {
            Issue.record(error)
        }
        await fixture.stop()
    }
}
