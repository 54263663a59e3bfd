import Crypto
import Foundation
import NimbusCore
import NimbusKit
import NimbusServer
import NimbusStore
import NimbusTesting
import Testing

/// The document and chunk routes over raw HTTP: content-addressed chunks, versions on a base, conflicts
/// kept, Recently Deleted, names, and every refusal.
@Suite(.cleansUp) struct DocumentRouteTests {
    struct Fixture {
        let server: TestServer
        let app: TestServer.SeededApp
        let ann: NimbusSession
        var documents: String { "/documents/1/\(app.container)/development" }
        var blobs: String { "/blobs/1/\(app.container)/development" }

        static func make(configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> Fixture {
            let server = try await TestServer.start(configure: configure)
            let app = try await server.seedApp()
            let ann = try await server.signIn(email: "ann@example.com", device: "phone")
            return Fixture(server: server, app: app, ann: ann)
        }

        static func hash(_ bytes: Data) -> String { SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }

        func upload(_ bytes: Data, as hash: String? = nil, session: NimbusSession? = nil) async throws -> RawResponse {
            try await server.request(
                .PUT, blobs + "/" + (hash ?? Self.hash(bytes)),
                headers: [
                    ("Authorization", "Bearer \((session ?? ann).sessionToken)"), ("X-Nimbus-API-Token", app.apiToken),
                    ("Content-Type", "application/octet-stream"),
                ], body: bytes)
        }

        func upload(bundle body: Data, session: NimbusSession? = nil) async throws -> RawResponse {
            try await server.request(
                .POST, blobs + "/upload",
                headers: [
                    ("Authorization", "Bearer \((session ?? ann).sessionToken)"), ("X-Nimbus-API-Token", app.apiToken),
                    ("Content-Type", "application/octet-stream"),
                ], body: body)
        }

        func fetch(_ hashes: [String], session: NimbusSession? = nil) async throws -> RawResponse {
            try await server.request(
                .POST, blobs + "/fetch", session: session ?? ann, apiToken: app.apiToken,
                json: String(decoding: try JSONEncoder().encode(ChunksFetchRequest(hashes: hashes)), as: UTF8.self))
        }

        func missing(_ hashes: [String]) async throws -> [String] {
            try await server.request(
                .POST, blobs + "/missing", session: ann, apiToken: app.apiToken,
                json: String(decoding: try JSONEncoder().encode(ChunksMissingRequest(hashes: hashes)), as: UTF8.self)
            ).decode(ChunksMissingResponse.self).missing
        }

        func content(_ bytes: Data, modifiedAt: Int64 = 1_000) -> DocumentContent {
            DocumentContent(
                contentHash: Self.hash(bytes), size: Int64(bytes.count),
                chunks: bytes.isEmpty ? [] : [DocumentChunk(hash: Self.hash(bytes), size: Int64(bytes.count))],
                modifiedAt: modifiedAt)
        }

        func modify(_ operations: [DocumentOperation], session: NimbusSession? = nil) async throws -> [DocumentResult] {
            let response = try await modifyRaw(operations, session: session)
            #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
            return try response.decode(DocumentModifyResponse.self).results
        }

        func modifyRaw(_ operations: [DocumentOperation], session: NimbusSession? = nil) async throws -> RawResponse {
            let body = String(decoding: try JSONEncoder().encode(DocumentModifyRequest(operations: operations)), as: UTF8.self)
            return try await server.request(
                .POST, documents + "/modify", session: session ?? ann, apiToken: app.apiToken, json: body)
        }

        /// Uploads `text` and saves it as a file.
        func save(
            _ id: String, _ name: String, _ text: String, in parent: String? = nil, base: String? = nil, modifiedAt: Int64 = 1_000
        ) async throws -> DocumentResult {
            let bytes = Data(text.utf8)
            #expect(try await upload(bytes).status == 204)
            return try await modify([
                DocumentOperation(
                    .save, itemID: id, parentID: parent, name: name, kind: .file, baseContentHash: base,
                    content: content(bytes, modifiedAt: modifiedAt))
            ])[0]
        }

        func changes(session: NimbusSession? = nil) async throws -> DocumentChangesResponse {
            try await server.request(.POST, documents + "/changes", session: session ?? ann, apiToken: app.apiToken, json: "{}")
                .decode(DocumentChangesResponse.self)
        }

        func items() async throws -> [String: DocumentItem] {
            Dictionary(uniqueKeysWithValues: try await changes().items.map { ($0.itemID, $0) })
        }
    }

    @Test func aFileIsSavedFromItsChunksAndReadBackWholeOrInRanges() async throws {
        let fixture = try await Fixture.make()
        let bytes = Data("Dear diary, today I synced a file.".utf8)
        let hash = Fixture.hash(bytes)
        let ask = #"{"hashes":["\#(hash)"]}"#
        let before = try await fixture.server.request(
            .POST, fixture.blobs + "/missing", session: fixture.ann, apiToken: fixture.app.apiToken, json: ask)
        #expect(try before.decode(ChunksMissingResponse.self).missing == [hash])
        let saved = try await fixture.save("diary", "Diary.txt", "Dear diary, today I synced a file.")
        #expect(saved.outcome == .applied && saved.item?.current?.content.contentHash == hash)
        let after = try await fixture.server.request(
            .POST, fixture.blobs + "/missing", session: fixture.ann, apiToken: fixture.app.apiToken, json: ask)
        #expect(try after.decode(ChunksMissingResponse.self).missing.isEmpty)

        let item = try #require(try await fixture.items()["diary"])
        #expect(item.name == "Diary.txt" && item.kind == .file && item.conflicts.isEmpty)
        let auth = [("Authorization", "Bearer \(fixture.ann.sessionToken)"), ("X-Nimbus-API-Token", fixture.app.apiToken)]
        let whole = try await fixture.server.request(.GET, fixture.blobs + "/" + hash, headers: auth)
        #expect(whole.status == 200 && whole.body == bytes)
        let part = try await fixture.server.request(.GET, fixture.blobs + "/" + hash, headers: auth + [("Range", "bytes=5-9")])
        #expect(part.status == 206 && part.body == bytes[5...9])
        #expect(part.headers["Content-Range"].first == "bytes 5-9/\(bytes.count)")
        let tail = try await fixture.server.request(.GET, fixture.blobs + "/" + hash, headers: auth + [("Range", "bytes=-5")])
        #expect(tail.status == 206 && tail.body == bytes.suffix(5))
        let beyond = try await fixture.server.request(.GET, fixture.blobs + "/" + hash, headers: auth + [("Range", "bytes=500-")])
        #expect(beyond.status == 416 && beyond.errorCode == .rangeNotSatisfiable)
    }

    @Test func editsOnOneBaseKeepBothVersionsUntilResolved() async throws {
        let fixture = try await Fixture.make()
        let first = try #require(try await fixture.save("note", "Note.txt", "v1").item?.current)
        let base = first.content.contentHash
        let fromPhone = try await fixture.save("note", "Note.txt", "phone edit", base: base, modifiedAt: 2_000)
        #expect(fromPhone.outcome == .applied)
        let fromLaptop = try await fixture.save("note", "Note.txt", "laptop edit", base: base, modifiedAt: 3_000)
        #expect(fromLaptop.outcome == .conflict)
        let item = try #require(try await fixture.items()["note"])
        #expect(item.current?.content.contentHash == Fixture.hash(Data("laptop edit".utf8)), "the later edit is current")
        #expect(item.conflicts.map(\.content.contentHash) == [Fixture.hash(Data("phone edit".utf8))])

        let resolved = try await fixture.modify([
            DocumentOperation(.resolve, itemID: "note", versionIDs: item.conflicts.map(\.versionID))
        ])[0]
        #expect(resolved.outcome == .applied && resolved.item?.conflicts.isEmpty == true)
        let versions = try await fixture.server.request(
            .POST, fixture.documents + "/versions", session: fixture.ann, apiToken: fixture.app.apiToken,
            json: #"{"itemID":"note"}"#
        ).decode(DocumentVersionsResponse.self)
        #expect(Set(versions.history.map(\.content.contentHash)) == [base, Fixture.hash(Data("phone edit".utf8))])
    }

    @Test func deletesGoToRecentlyDeletedAndAnEditWinsOverThem() async throws {
        let fixture = try await Fixture.make()
        let base = try #require(try await fixture.save("doc", "Doc.txt", "v1").item?.current?.content.contentHash)
        let stale = try await fixture.modify([
            DocumentOperation(.delete, itemID: "doc", baseContentHash: Fixture.hash(Data("other".utf8)))
        ])[0]
        #expect(stale.outcome == .failed && stale.serverErrorCode == .conflict)
        let deleted = try await fixture.modify([DocumentOperation(.delete, itemID: "doc", baseContentHash: base)])[0]
        #expect(deleted.outcome == .applied && deleted.item?.deletedAt != nil)
        let trash = try await fixture.server.request(
            .GET, fixture.documents + "/trash", session: fixture.ann, apiToken: fixture.app.apiToken
        ).decode(DocumentTrashResponse.self)
        #expect(trash.items.map(\.itemID) == ["doc"])

        let edited = try await fixture.save("doc", "Doc.txt", "edited offline", base: base)
        #expect(edited.outcome == .applied && edited.item?.deletedAt == nil)
        #expect(try await fixture.items()["doc"]?.current?.content.contentHash == Fixture.hash(Data("edited offline".utf8)))

        let again = try #require(edited.item?.current?.content.contentHash)
        _ = try await fixture.modify([DocumentOperation(.delete, itemID: "doc", baseContentHash: again)])
        let restored = try await fixture.modify([DocumentOperation(.restore, itemID: "doc")])[0]
        #expect(restored.item?.deletedAt == nil && restored.item?.name == "Doc.txt")
        _ = try await fixture.modify([DocumentOperation(.delete, itemID: "doc", baseContentHash: again)])
        #expect(try await fixture.modify([DocumentOperation(.purge, itemID: "doc")])[0].outcome == .applied)
        let changes = try await fixture.changes()
        #expect(changes.removed == ["doc"] && changes.items.isEmpty)
    }

    @Test func namesCollideIgnoringCaseAndNormalisationWithoutLoss() async throws {
        let fixture = try await Fixture.make()
        _ = try await fixture.save("a", "Café.txt", "first")
        let merged = try await fixture.save("b", "Cafe\u{301}.txt", "second", modifiedAt: 5_000)
        #expect(merged.outcome == .merged && merged.item?.itemID == "a", "the same new name is one item")
        #expect(merged.item?.conflicts.count == 1)

        // A new folder of an existing folder's name is that folder (two devices' `Documents`), and what the same
        // batch puts in it lands in the existing one.
        _ = try await fixture.modify([DocumentOperation(.save, itemID: "f", name: "Folder", kind: .folder)])
        let batch = try await fixture.modify([
            DocumentOperation(.save, itemID: "g", name: "FOLDER", kind: .folder),
            DocumentOperation(.save, itemID: "h", parentID: "g", name: "Inside", kind: .folder),
        ])
        #expect(batch[0].outcome == .merged && batch[0].item?.itemID == "f" && batch[0].item?.name == "Folder")
        #expect(batch[1].outcome == .applied && batch[1].item?.parentID == "f")
        // Other items taking a name held by another kind get Finder's numbers.
        _ = try await fixture.save("g", "Notes", "a file")
        let folder = try await fixture.modify([DocumentOperation(.move, itemID: "g", name: "FOLDER")])[0]
        #expect(folder.item?.name == "FOLDER 2")
        let moved = try await fixture.modify([DocumentOperation(.move, itemID: "g", name: "folder")])[0]
        #expect(moved.item?.name == "folder 2")
        let report = try await fixture.save("r", "Report.pages.txt", "r")
        #expect(report.item?.name == "Report.pages.txt")
        let copy = try await fixture.modify([DocumentOperation(.move, itemID: "g", parentID: nil, name: "report.pages.txt")])[0]
        #expect(copy.item?.name == "report.pages 2.txt")

        let odd = try await fixture.save("odd", "What? <draft>.", "x")
        #expect(odd.item?.nameIssues.count == 2)
    }

    @Test func foldersHoldItemsAndCannotGoInsideThemselves() async throws {
        let fixture = try await Fixture.make()
        _ = try await fixture.modify([
            DocumentOperation(.save, itemID: "outer", name: "Outer", kind: .folder),
            DocumentOperation(.save, itemID: "inner", parentID: "outer", name: "Inner", kind: .folder),
        ])
        let cycle = try await fixture.modify([DocumentOperation(.move, itemID: "outer", parentID: "inner", name: "Outer")])[0]
        #expect(cycle.outcome == .failed && cycle.serverErrorCode == .conflict)
        let notEmpty = try await fixture.modify([DocumentOperation(.delete, itemID: "outer")])[0]
        #expect(notEmpty.serverErrorCode == .conflict)
        let orphan = try await fixture.save("lost", "Lost.txt", "x", in: "nowhere")
        #expect(orphan.outcome == .failed && orphan.serverErrorCode == .conflict)
        let items = try await fixture.items()
        #expect(items["outer"]?.parentID == nil && items["inner"]?.parentID == "outer" && items["lost"] == nil)
    }

    /// A batch's later operations see its earlier ones (the writer keeps the items a batch read or wrote): a folder
    /// moved into another cannot then take that one in, and a folder deleted takes no new file.
    @Test func aBatchSeesItsOwnEarlierOperations() async throws {
        let fixture = try await Fixture.make()
        let bytes = Data("x".utf8)
        #expect(try await fixture.upload(bytes).status == 204)
        let results = try await fixture.modify([
            DocumentOperation(.save, itemID: "box", name: "Box", kind: .folder),
            DocumentOperation(.save, itemID: "crate", name: "Crate", kind: .folder),
            DocumentOperation(.move, itemID: "crate", parentID: "box", name: "Crate"),
            DocumentOperation(.move, itemID: "box", parentID: "crate", name: "Box"),
            DocumentOperation(.save, itemID: "bin", name: "Bin", kind: .folder),
            DocumentOperation(.delete, itemID: "bin"),
            DocumentOperation(
                .save, itemID: "late", parentID: "bin", name: "Late.txt", kind: .file, content: fixture.content(bytes)),
        ])
        #expect(results.map(\.outcome) == [.applied, .applied, .applied, .failed, .applied, .applied, .failed])
        #expect(results[3].serverErrorCode == .conflict && results[6].serverErrorCode == .conflict)
        let items = try await fixture.items()
        #expect(items["box"]?.parentID == nil && items["crate"]?.parentID == "box")
        #expect(items["bin"]?.deletedAt != nil && items["late"] == nil)
    }

    @Test func badChunksAndBadOperationsAreRefusedAndChangeNothing() async throws {
        let fixture = try await Fixture.make()
        let bytes = Data("real bytes".utf8)
        let lying = try await fixture.upload(bytes, as: Fixture.hash(Data("other bytes".utf8)))
        #expect(lying.status == 400 && lying.errorCode == .chunkMismatch)
        #expect(try await fixture.upload(bytes, as: "..%2F..%2Fetc%2Fpasswd").status == 400)
        let neverUploaded = try await fixture.modify([
            DocumentOperation(.save, itemID: "x", name: "X", kind: .file, content: fixture.content(Data("never".utf8)))
        ])[0]
        #expect(neverUploaded.outcome == .failed && neverUploaded.serverErrorCode == .chunkMissing)
        for bad in [
            DocumentOperation(.save, itemID: "../x", name: "X", kind: .folder),
            DocumentOperation(.save, itemID: "x", name: "a/b", kind: .folder),
            DocumentOperation(.save, itemID: "x", name: "..", kind: .folder),
            DocumentOperation(.save, itemID: "x", name: "cache.nosync", kind: .folder),
            DocumentOperation(.save, itemID: "x", name: ".nimbus-download", kind: .folder),
            DocumentOperation(.save, itemID: "x", name: ".Report.txt.icloud", kind: .folder),
            DocumentOperation(.save, itemID: "x", name: "nul\u{0}", kind: .folder),
            DocumentOperation(.save, itemID: "x", name: String(repeating: "n", count: 256), kind: .folder),
            DocumentOperation(.save, itemID: "x", name: "X", kind: .file),
        ] {
            // Each fails alone, so that one bad name does not hold back a device's other changes.
            let results = try await fixture.modify([bad, DocumentOperation(.save, itemID: "fine", name: "Fine", kind: .folder)])
            #expect(results[0].outcome == .failed && results[0].serverErrorCode == .badRequest, "\(bad)")
            #expect(results[1].outcome == .applied)
        }
        let malformed = try await fixture.server.request(
            .POST, fixture.documents + "/modify", session: fixture.ann, apiToken: fixture.app.apiToken,
            json: #"{"operations":[{"operationType":"save","itemID":7}]}"#)
        #expect(malformed.status == 400)
        #expect(try await fixture.items().keys.sorted() == ["fine"])
    }

    /// Small files' chunks travel many to a request: stored all together or, when one is wrong, not at all.
    @Test func manyChunksTravelInOneBundleAllOrNothing() async throws {
        let fixture = try await Fixture.make { $0.userQuotaBytes = 10_000 }
        let chunks = (1...3).map {
            ChunkBundle.Chunk(hash: Fixture.hash(Data("note \($0)".utf8)), bytes: Data("note \($0)".utf8))
        }
        let stored = try await fixture.upload(bundle: ChunkBundle.encode(chunks))
        #expect(stored.status == 204, "\(String(decoding: stored.body, as: UTF8.self))")
        #expect(try await fixture.missing(chunks.map(\.hash)).isEmpty)
        let fetched = try await fixture.fetch(chunks.reversed().map(\.hash))
        #expect(fetched.status == 200 && (try? ChunkBundle.decode(fetched.body)) == chunks.reversed())

        let fresh = (4...5).map { ChunkBundle.Chunk(hash: Fixture.hash(Data("note \($0)".utf8)), bytes: Data("note \($0)".utf8)) }
        let lying = ChunkBundle.Chunk(hash: Fixture.hash(Data("claimed".utf8)), bytes: Data("actual".utf8))
        var cut = ChunkBundle.encode(fresh)
        cut.removeLast()
        var badName = ChunkBundle.encode(fresh)
        badName.replaceSubrange(0..<6, with: Data("../../".utf8))
        for (body, code, why) in [
            (ChunkBundle.encode(fresh + [lying]), ErrorCode.chunkMismatch, "a chunk not hashing to its name"),
            (cut, .badRequest, "a body cut short"), (badName, .badRequest, "a name that is not a hash"),
            (Data("{}".utf8), .badRequest, "no bundle at all"),
            (
                ChunkBundle.encode(fresh + [ChunkBundle.Chunk(hash: Fixture.hash(Data()), bytes: Data())]), .badRequest,
                "an empty chunk"
            ),
            (
                ChunkBundle.encode(
                    fresh + [ChunkBundle.Chunk(hash: Fixture.hash(Data(count: 9 << 20)), bytes: Data(count: 9 << 20))]),
                .badRequest, "a chunk over 8 MiB"
            ),
        ] {
            let refused = try await fixture.upload(bundle: body)
            #expect(refused.status == 400 && refused.errorCode == code, "\(why)")
            #expect(try await fixture.missing(fresh.map(\.hash)) == fresh.map(\.hash), "nothing was stored: \(why)")
        }
        let huge = ChunkBundle.Chunk(
            hash: Fixture.hash(Data(repeating: 1, count: 20_000)), bytes: Data(repeating: 1, count: 20_000))
        let overQuota = try await fixture.upload(bundle: ChunkBundle.encode(fresh + [huge]))
        #expect(overQuota.status == 413 && overQuota.errorCode == .quotaExceeded)
        #expect(try await fixture.missing(fresh.map(\.hash)) == fresh.map(\.hash), "none of an over-quota bundle is held")

        let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        #expect(try await fixture.fetch([chunks[0].hash], session: bob).status == 404, "a hash alone gives no one else's bytes")
        let unknown = try await fixture.fetch([chunks[0].hash, fresh[0].hash])
        #expect(unknown.status == 404 && unknown.errorCode == .notFound)
        #expect(try await fixture.fetch(["../../etc/passwd"]).status == 400)
    }

    /// Which folders are file packages is the container's setting, set by an administrator and told to
    /// every device with the changes.
    @Test func packageExtensionsAreAContainerSetting() async throws {
        let fixture = try await Fixture.make()
        #expect(try await fixture.changes().packageExtensions == ["key", "numbers", "pages", "rtfd"])
        let admin = try await fixture.server.signInAdministrator()
        let path = "/admin/1/containers/\(fixture.app.container)/packages"
        let set = try await fixture.server.request(.PUT, path, session: admin, json: #"{"packageExtensions":["sketch","pages"]}"#)
        #expect(set.status == 200 && (try? set.decode(Container.self))?.packageExtensions == ["sketch", "pages"])
        #expect(try await fixture.changes().packageExtensions == ["sketch", "pages"])
        for bad in [#"{"packageExtensions":[".pages"]}"#, #"{"packageExtensions":["PAGES"]}"#, #"{"packageExtensions":[""]}"#] {
            let refused = try await fixture.server.request(.PUT, path, session: admin, json: bad)
            #expect(refused.status == 400, "\(bad)")
        }
        #expect(try await fixture.changes().packageExtensions == ["sketch", "pages"], "a refused setting changes nothing")
        let nobody = try await fixture.server.request(
            .PUT, "/admin/1/containers/iCloud.com.example.None/packages", session: admin, json: #"{"packageExtensions":[]}"#)
        #expect(nobody.status == 404)
        let notAdmin = try await fixture.server.request(.PUT, path, session: fixture.ann, json: #"{"packageExtensions":[]}"#)
        #expect(notAdmin.status == 403 || notAdmin.status == 401)
    }

    @Test func anotherUsersItemsAndChunksStayOutOfReach() async throws {
        let fixture = try await Fixture.make()
        let secret = Data("ann's secret".utf8)
        _ = try await fixture.save("s", "Secret.txt", "ann's secret")
        let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
        #expect(try await fixture.changes(session: bob).items.isEmpty)
        let hash = Fixture.hash(secret)
        let download = try await fixture.server.request(
            .GET, fixture.blobs + "/" + hash,
            headers: [("Authorization", "Bearer \(bob.sessionToken)"), ("X-Nimbus-API-Token", fixture.app.apiToken)])
        #expect(download.status == 404)
        let claimed = try await fixture.modify(
            [DocumentOperation(.save, itemID: "mine", name: "Mine.txt", kind: .file, content: fixture.content(secret))],
            session: bob)[0]
        #expect(claimed.serverErrorCode == .chunkMissing, "a hash alone does not give someone else's bytes")
        let edit = try await fixture.modify(
            [DocumentOperation(.delete, itemID: "s", baseContentHash: hash)], session: bob)[0]
        #expect(edit.serverErrorCode == .notFound)
        #expect(try await fixture.items()["s"]?.deletedAt == nil)
    }

    /// A device uploading a large file announces the chunks it has stored so far; the account's other devices
    /// hear it over their push sockets (not the announcing device, not another account). Only chunks the caller
    /// holds, at their stored sizes, can be announced, and a malformed announcement is refused: none of those
    /// reaches anyone.
    @Test func storedChunksAnnouncedReachOnlyTheAccountsOtherDevices() async throws {
        let fixture = try await Fixture.make()
        let laptop = try await fixture.server.signIn(email: "ann@example.com", device: "laptop")
        let bob = try await fixture.server.signIn(email: "bob@example.com", device: "bob's phone")
        let listeners = [fixture.ann, laptop, bob].map { PushTests.Device(server: fixture.server, session: $0) }
        defer { for listener in listeners { listener.task.cancel() } }
        #expect(await eventually { listeners.allSatisfy(\.isConnected) })
        let (first, second) = (Data("first chunk".utf8), Data("second chunk".utf8))
        for bytes in [first, second] { #expect(try await fixture.upload(bytes).status == 204) }
        let chunks = [first, second].map { DocumentChunk(hash: Fixture.hash($0), size: Int64($0.count)) }
        func announce(_ announcement: ChunksAnnouncement, as session: NimbusSession? = nil) async throws -> RawResponse {
            try await fixture.server.request(
                .POST, fixture.blobs + "/announce", session: session ?? fixture.ann, apiToken: fixture.app.apiToken,
                json: String(decoding: try JSONEncoder().encode(announcement), as: UTF8.self))
        }

        let notStored = DocumentChunk(hash: Fixture.hash(Data("never uploaded".utf8)), size: 14)
        let wrongSize = DocumentChunk(hash: chunks[0].hash, size: chunks[0].size + 1)
        for (refused, code) in [
            (ChunksAnnouncement(itemID: "movie", from: 0, chunks: [chunks[0], notStored]), ErrorCode.chunkMissing),
            (ChunksAnnouncement(itemID: "movie", from: 0, chunks: [wrongSize]), .chunkMissing),
            (ChunksAnnouncement(itemID: "movie", from: 0, chunks: []), .badRequest),
            (ChunksAnnouncement(itemID: "movie", from: -1, chunks: chunks), .badRequest),
            (ChunksAnnouncement(itemID: "movie", from: DocumentNames.maxChunks - 1, chunks: chunks), .badRequest),
            (ChunksAnnouncement(itemID: "movie", from: 0, chunks: Array(repeating: chunks[0], count: 33)), .badRequest),
            (ChunksAnnouncement(itemID: "../movie", from: 0, chunks: chunks), .badRequest),
            (
                ChunksAnnouncement(itemID: "movie", from: 0, chunks: [DocumentChunk(hash: "../../etc/passwd", size: 1)]),
                .badRequest
            ),
        ] {
            let response = try await announce(refused)
            #expect(response.errorCode == code, "\(refused)")
        }
        let bobs = try await announce(ChunksAnnouncement(itemID: "movie", from: 0, chunks: chunks), as: bob)
        #expect(bobs.errorCode == .chunkMissing, "knowing a hash is not holding the chunk")

        #expect(try await announce(ChunksAnnouncement(itemID: "movie", from: 0, chunks: chunks)).status == 204)
        #expect(await eventually { listeners[1].received.count == 1 })
        let heard = listeners[1].received[0]
        #expect(heard.type == .chunksAnnounced && heard.zone?.service.container == fixture.app.container)
        #expect(
            heard.announcement
                == ChunksAnnouncement(itemID: "movie", from: 0, chunks: chunks, device: fixture.ann.deviceID))
        // Published after the laptop's message, in order on each socket: had they heard anything, it would be here.
        _ = try await PushTests.set("after", on: fixture.server, app: fixture.app, as: laptop)
        #expect(await eventually { listeners[0].received.count == 1 })
        #expect(listeners[0].received.map(\.type) == [.zoneMoved], "the announcing device does not hear itself")
        #expect(listeners[2].received.isEmpty, "another account hears nothing")
    }

    /// Uploaded chunks count against the quota until a version names them, then through the version;
    /// a save that would go over it fails whole.
    @Test func uploadsAndSavesOverTheQuotaAreRefused() async throws {
        let fixture = try await Fixture.make { $0.userQuotaBytes = 1_000 }
        let tooBig = try await fixture.upload(Data(repeating: 7, count: 1_500))
        #expect(tooBig.status == 413 && tooBig.errorCode == .quotaExceeded)
        let text = String(repeating: "x", count: 600)
        #expect(try await fixture.save("first", "First.txt", text).outcome == .applied)
        #expect(try await fixture.upload(Data(repeating: 8, count: 600)).errorCode == .quotaExceeded, "600 + 600 > 1,000")
        // The same bytes again (no upload needed) as a second file: 1,200 bytes of documents.
        let response = try await fixture.modifyRaw([
            DocumentOperation(.save, itemID: "folder", name: "Folder", kind: .folder),
            DocumentOperation(.save, itemID: "copy", name: "Copy.txt", kind: .file, content: fixture.content(Data(text.utf8))),
        ])
        #expect(response.status == 413 && response.errorCode == .quotaExceeded)
        #expect(try await fixture.items().keys.sorted() == ["first"], "nothing of the batch was written")
    }

    /// A chunk holding ends when nothing needs it: an upload no version named within a day, or a chunk
    /// whose last version was purged; the chunk must then be uploaded again to be named.
    @Test func chunkHoldingsEndWhenNothingNeedsThem() async throws {
        let fixture = try await Fixture.make()
        let abandoned = Data("never saved".utf8)
        #expect(try await fixture.upload(abandoned).status == 204)
        let purged = try #require(try await fixture.save("gone", "Gone.txt", "purged").item?.current?.content.contentHash)
        _ = try await fixture.modify([DocumentOperation(.delete, itemID: "gone", baseContentHash: purged)])
        _ = try await fixture.modify([DocumentOperation(.purge, itemID: "gone")])
        _ = try await fixture.save("kept", "Kept.txt", "kept")
        fixture.server.clock.advance(by: 2 * 24 * 3600)
        #expect(try await fixture.server.server.expireDocuments() == 2)
        let session = try await fixture.server.signIn(email: "ann@example.com", device: "phone")
        let hashes = [Fixture.hash(abandoned), purged, Fixture.hash(Data("kept".utf8))]
        let missing = try await fixture.server.request(
            .POST, fixture.blobs + "/missing", session: session, apiToken: fixture.app.apiToken,
            json: String(decoding: try JSONEncoder().encode(ChunksMissingRequest(hashes: hashes)), as: UTF8.self)
        ).decode(ChunksMissingResponse.self).missing
        #expect(missing == Array(hashes.prefix(2)))
    }

    /// Chunks no version holds (purged items, uploads never saved) are collected; those of current,
    /// conflict and history versions stay.
    @Test func chunksNoVersionHoldsAreCollected() async throws {
        let fixture = try await Fixture.make()
        let old = try #require(try await fixture.save("kept", "Kept.txt", "old text").item?.current?.content.contentHash)
        _ = try await fixture.save("kept", "Kept.txt", "new text", base: old)
        let gone = try #require(try await fixture.save("gone", "Gone.txt", "purged text").item?.current?.content.contentHash)
        _ = try await fixture.modify([DocumentOperation(.delete, itemID: "gone", baseContentHash: gone)])
        _ = try await fixture.modify([DocumentOperation(.purge, itemID: "gone")])
        #expect(try await fixture.upload(Data("never saved".utf8)).status == 204)
        #expect(try await fixture.server.server.collectAssets() == 0, "recent uploads stay")

        fixture.server.clock.advance(by: 2 * 24 * 3600)
        #expect(try await fixture.server.server.collectAssets() == 2)
        let hashes = ["old text", "new text", "purged text", "never saved"].map { Fixture.hash(Data($0.utf8)) }
        let missing = try await fixture.server.request(
            .POST, fixture.blobs + "/missing", session: fixture.ann, apiToken: fixture.app.apiToken,
            json: String(decoding: try JSONEncoder().encode(ChunksMissingRequest(hashes: hashes)), as: UTF8.self)
        ).decode(ChunksMissingResponse.self).missing
        #expect(missing == Array(hashes[2...]))
    }

    /// Earlier versions and Recently Deleted items are kept for 30 days from when they left, then removed.
    @Test func historyAndRecentlyDeletedExpireAfterThirtyDays() async throws {
        let fixture = try await Fixture.make()
        let first = try #require(try await fixture.save("kept", "Kept.txt", "v1").item?.current?.content.contentHash)
        _ = try await fixture.save("kept", "Kept.txt", "v2", base: first)
        let gone = try #require(try await fixture.save("gone", "Gone.txt", "bye").item?.current?.content.contentHash)
        _ = try await fixture.modify([DocumentOperation(.delete, itemID: "gone", baseContentHash: gone)])
        // Sessions last two weeks: each look signs in again.
        let versions = { () async throws -> DocumentVersionsResponse in
            try await fixture.server.request(
                .POST, fixture.documents + "/versions",
                session: try await fixture.server.signIn(email: "ann@example.com", device: "phone"),
                apiToken: fixture.app.apiToken, json: #"{"itemID":"kept"}"#
            ).decode(DocumentVersionsResponse.self)
        }

        fixture.server.clock.advance(by: 29 * 24 * 3600)
        #expect(try await fixture.server.server.expireDocuments() == 0)
        #expect(try await versions().history.count == 1)

        fixture.server.clock.advance(by: 2 * 24 * 3600)
        // The earlier version and the deleted item, then the holdings of their two chunks.
        #expect(try await fixture.server.server.expireDocuments() == 4)
        #expect(try await versions().history.isEmpty)
        #expect(try await versions().item.current?.content.contentHash == Fixture.hash(Data("v2".utf8)), "current stays")
        let changes = try await fixture.changes(
            session: try await fixture.server.signIn(email: "ann@example.com", device: "phone"))
        #expect(changes.removed == ["gone"] && changes.items.map(\.itemID) == ["kept"])
    }
}
