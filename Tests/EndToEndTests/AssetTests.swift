import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Assets: files uploaded for record fields, downloaded by signed URLs from fetched records.
@Suite(.cleansUp) struct AssetTests {
    static func file(bytes: Int) throws -> (URL, Data) {
        let data = Data(Secrets.randomBytes(bytes))
        let url = TestServer.temporaryDirectory().appendingPathComponent("photo.bin")
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url)
        return (url, data)
    }

    @Test func aFileSavedOnOneDeviceDownloadsOnAnother() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let phone = CloudContainer(
            identifier: app.container, session: try await server.signIn(email: "ann@example.com", device: "phone"),
            apiToken: app.apiToken
        ).privateCloudDatabase
        let laptop = CloudContainer(
            identifier: app.container, session: try await server.signIn(email: "ann@example.com", device: "laptop"),
            apiToken: app.apiToken
        ).privateCloudDatabase
        let (url, bytes) = try Self.file(bytes: 1_500_000)

        var photo = Record(recordType: "Photos")
        photo["title"] = "Beach"
        photo["image"] = Asset(fileURL: url)
        photo = try await phone.save(photo)
        let saved = try #require(photo["image"] as Asset?)
        #expect(saved.size == 1_500_000 && saved.fileChecksum != nil)

        var fetched = try await laptop.record(for: photo.recordID)
        let asset = try #require(fetched["image"] as Asset?)
        #expect(try await laptop.download(asset) == bytes)
        let copy = TestServer.temporaryDirectory().appendingPathComponent("copy.bin")
        try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try await laptop.download(asset, to: copy)
        #expect(try Data(contentsOf: copy) == bytes)

        // Sending the fetched asset back unchanged keeps the file.
        fetched["title"] = "Beach at dusk"
        fetched = try await laptop.modifyRecords(saving: [fetched], deleting: [], savePolicy: .allKeys).saveResults[
            fetched.recordID]!.get()
        let kept = try #require(fetched["image"] as Asset?)
        #expect(
            kept.size == 1_500_000 && kept.fileChecksum == saved.fileChecksum, "the stored size and checksum survive a re-save")
        #expect(try await phone.download(kept) == bytes)
        let schema = try #require(try await server.store.schemaText(container: app.container, environment: "development"))
        #expect(schema.contains("image ASSET"))
    }

    @Test func uploadsAndDownloadsAreGuarded() async throws {
        let server = try await TestServer.start { $0.maxAssetBytes = 100_000 }
        let app = try await server.seedApp()
        let annSession = try await server.signIn(email: "ann@example.com", device: "phone")
        let ann = CloudContainer(identifier: app.container, session: annSession, apiToken: app.apiToken).privateCloudDatabase
        let bob = try await server.signIn(email: "bob@example.com", device: "laptop")
        let (url, _) = try Self.file(bytes: 50_000)
        var photo = Record(recordType: "Photos")
        photo["image"] = Asset(fileURL: url)
        photo = try await ann.save(photo)
        let downloadURL = try #require(
            (photo["image"] as Asset?).flatMap { asset -> String? in
                if case .asset(let value) = asset.fieldValue { value.downloadURL } else { nil }
            })
        let path = String(downloadURL.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" })

        // A download URL works, a tampered one does not, and it expires.
        #expect(try await server.request(.GET, path).status == 200)
        #expect(
            try await server.request(.GET, path.replacingOccurrences(of: "signature=", with: "signature=0")).errorCode
                == .accessDenied)
        server.clock.advance(by: 2 * 3600)
        #expect(try await server.request(.GET, path).errorCode == .accessDenied)

        // Another user cannot put ann's file in a record by naming it.
        let assetID = try #require(path.split(separator: "/").last?.split(separator: "?").first)
        let base = "/database/1/\(app.container)/development/private/"
        let stolen =
            #"{"operations":[{"operationType":"create","record":{"recordType":"Photos","fields":{"image":{"value":{"assetID":"\#(assetID)"},"type":"ASSETID"}}}}]}"#
        let taken = try await server.request(.POST, base + "records/modify", session: bob, apiToken: app.apiToken, json: stolen)
        guard case .failure(let refusal) = try taken.decode(RecordsResponse.self).records.first else {
            Issue.record("a record naming another user's file must not save")
            return
        }
        #expect(refusal.serverErrorCode == .badRequest)
        let unreceipted =
            #"{"operations":[{"operationType":"create","record":{"recordType":"Photos","fields":{"album":{"value":[{"fileChecksum":"x","size":1}],"type":"ASSETID_LIST"}}}}]}"#
        let listed = try await server.request(
            .POST, base + "records/modify", session: bob, apiToken: app.apiToken, json: unreceipted)
        guard case .failure(let listRefusal) = try listed.decode(RecordsResponse.self).records.first else {
            Issue.record("an asset list without receipts must not save")
            return
        }
        #expect(listRefusal.serverErrorCode == .badRequest)

        // Upload URLs: one use, a size limit, and 15 minutes.
        let tokens = try await server.request(
            .POST, base + "assets/upload", session: annSession, apiToken: app.apiToken,
            json:
                #"{"tokens":[{"recordType":"Photos","fieldName":"image"},{"recordType":"Photos","fieldName":"image"},{"recordType":"Photos","fieldName":"image"}]}"#
        ).decode(AssetUploadResponse.self).tokens
        let uploadPaths = tokens.map { String($0.url.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }) }
        #expect(try await server.request(.POST, uploadPaths[0], body: Data(count: 10)).status == 200)
        #expect(try await server.request(.POST, uploadPaths[0], body: Data(count: 10)).errorCode == .badRequest)
        #expect(try await server.request(.POST, uploadPaths[1], body: Data(count: 100_001)).errorCode == .requestTooLarge)
        server.clock.advance(by: 16 * 60)
        #expect(try await server.request(.POST, uploadPaths[2], body: Data(count: 10)).errorCode == .badRequest)
        #expect(try await server.request(.POST, "/assets/1/upload/../../etc/passwd", body: Data(count: 10)).status == 404)
    }

    @Test func filesNoRecordHoldsAreCollected() async throws {
        let server = try await TestServer.start()
        let app = try await server.seedApp()
        let session = try await server.signIn(email: "ann@example.com", device: "phone")
        let database = CloudContainer(identifier: app.container, session: session, apiToken: app.apiToken).privateCloudDatabase
        func blobCount() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: server.dataDirectory.appendingPathComponent("blobs").path).count
        }
        var photos = [Record]()
        for (title, size) in [("deleted", 1000), ("replaced", 2000), ("kept", 3000)] {
            var photo = Record(recordType: "Photos")
            photo["title"] = title
            photo["image"] = Asset(fileURL: try Self.file(bytes: size).0)
            photos.append(try await database.save(photo))
        }
        _ = try await database.deleteRecord(withID: photos[0].recordID)
        photos[1]["image"] = Asset(fileURL: try Self.file(bytes: 4000).0)
        photos[1] = try await database.save(photos[1])
        // An upload never saved into a record.
        let base = "/database/1/\(app.container)/development/private/"
        let token = try await server.request(
            .POST, base + "assets/upload", session: session, apiToken: app.apiToken,
            json: #"{"tokens":[{"recordType":"Photos","fieldName":"image"}]}"#
        ).decode(AssetUploadResponse.self).tokens[0]
        #expect(
            try await server.request(
                .POST, String(token.url.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }), body: Data(count: 10)
            ).status == 200)
        #expect(try blobCount() == 5)

        // Recent files stay (a receipt may still bring them into a record); once no receipt can, only
        // the files records hold remain, and they still download.
        #expect(try await server.server.collectAssets() == 0)
        #expect(try blobCount() == 5)
        server.clock.advance(by: 2 * 24 * 3600)
        #expect(try await server.server.collectAssets() == 3)
        #expect(try blobCount() == 2)
        for photo in photos.dropFirst() {
            let fetched = try await database.record(for: photo.recordID)
            let asset = try #require(fetched["image"] as Asset?)
            #expect(try await database.download(asset).count == asset.size.map(Int.init))
        }
    }
}
