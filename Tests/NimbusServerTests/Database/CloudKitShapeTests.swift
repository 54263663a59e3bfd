import Foundation
import NimbusCore
import NimbusKit
import NimbusTesting
import Testing

/// Request shapes that CloudKit Web Services clients written by others send, and endpoints they call,
/// as raw CloudKit JSON.
@Suite(.cleansUp) struct CloudKitShapeTests {
    typealias JSON = [String: Any]

    static func json(_ response: RawResponse) throws -> JSON {
        try #require(
            try JSONSerialization.jsonObject(with: response.body) as? JSON, "\(String(decoding: response.body, as: UTF8.self))")
    }

    @Test func zonesAreLookedUpByZoneIDsAsAppleDocumentsAndByZoneDictionaries() async throws {
        try await DatabaseFixture.run { fixture in
            _ = try await fixture.post(
                "zones/modify", #"{"operations":[\#(ZoneAndChangeTests.zoneOperation("create", "Lists"))]}"#)
            for body in [
                #"{"zones":[{"zoneName":"Lists"},{"zoneName":"Nope"}]}"#,
                #"{"zones":[{"zoneID":{"zoneName":"Lists"}},{"zoneID":{"zoneName":"Nope"}}]}"#,
            ] {
                let zones = try #require(try Self.json(try await fixture.post("zones/lookup", body))["zones"] as? [JSON])
                #expect(
                    ((zones.first?["zoneID"] as? JSON)?["zoneName"] as? String) == "Lists"
                        && zones.first?["serverErrorCode"] == nil, "\(body)")
                #expect(zones.last?["serverErrorCode"] as? String == "ZONE_NOT_FOUND", "\(body)")
            }
        }
    }

    @Test func aSubscriptionIsDeletedByItsIDAlone() async throws {
        try await DatabaseFixture.run { fixture in
            let create =
                #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"all-changes","subscriptionType":"zone"}}]}"#
            #expect(try await fixture.post("subscriptions/modify", create).status == 200)
            let deleted = try await fixture.post(
                "subscriptions/modify",
                #"{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"all-changes"}}]}"#)
            let answer = try #require(try Self.json(deleted)["subscriptions"] as? [JSON])
            #expect(
                answer.first?["subscriptionID"] as? String == "all-changes"
                    && answer.first?["subscriptionType"] as? String == "zone")
            let list = try #require(try Self.json(try await fixture.get("subscriptions/list"))["subscriptions"] as? [JSON])
            #expect(list.isEmpty)
            let again = try await fixture.post(
                "subscriptions/modify",
                #"{"operations":[{"operationType":"delete","subscription":{"subscriptionID":"all-changes"}}]}"#)
            #expect((try Self.json(again)["subscriptions"] as? [JSON])?.first?["serverErrorCode"] as? String == "NOT_FOUND")
        }
    }

    /// Users are found only once they chose to be, and a lookup that finds no one answers the same
    /// whether or not the email or phone number belongs to someone.
    @Test func usersAreDiscoverableOnlyOnceTheyOptIn() async throws {
        try await DatabaseFixture.run { fixture in
            let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
            let current = try Self.json(try await fixture.get("users/current"))
            #expect(current["userRecordName"] as? String == fixture.ann.userRecordName)

            let discover =
                #"{"lookupInfos":[{"emailAddress":"BOB@example.com"},{"phoneNumber":"+44 (20) 7946-0958"},{"emailAddress":"nobody@example.com"}]}"#
            let hidden = try await fixture.post("users/discover", discover)
            #expect(hidden.status == 200)
            #expect((try Self.json(hidden)["users"] as? [JSON])?.isEmpty == true)
            #expect((try Self.json(try await fixture.get("users/discover"))["users"] as? [JSON])?.isEmpty == true)

            let bobClient = NimbusClient(session: bob, apiToken: nil)
            let profile: AccountProfile = try await bobClient.send(
                .PUT, "/auth/1/profile",
                body: AccountProfile(firstName: "Bob", lastName: "Byrne", phoneNumber: "+44 20 7946 0958", discoverable: true))
            #expect(profile.phoneNumber == "+442079460958")
            let found = try #require(try Self.json(try await fixture.post("users/discover", discover))["users"] as? [JSON])
            #expect(found.count == 2 && found.allSatisfy { $0["userRecordName"] as? String == bob.userRecordName })
            #expect((found[0]["lookupInfo"] as? JSON)?["emailAddress"] as? String == "BOB@example.com")
            #expect((found[1]["nameComponents"] as? JSON)?["givenName"] as? String == "Bob")
            #expect(
                !String(decoding: try await fixture.post("users/discover", discover).body, as: UTF8.self).contains(
                    "bob@example.com"),
                "an identity carries the lookup that found it, not the user's other addresses")
            let all = try #require(try Self.json(try await fixture.get("users/discover"))["users"] as? [JSON])
            #expect(all.map { $0["userRecordName"] as? String } == [bob.userRecordName])

            let byEmail = try Self.json(
                try await fixture.post(
                    "users/lookup/email", #"{"users":[{"emailAddress":"bob@example.com"},{"emailAddress":"ann@example.com"}]}"#))
            #expect((byEmail["users"] as? [JSON])?.map { $0["lastName"] as? String } == ["Byrne"], "Ann did not opt in")
            let byID = try Self.json(
                try await fixture.post("users/lookup/id", #"{"users":[{"userRecordName":"\#(bob.userRecordName)"}]}"#))
            #expect((byID["users"] as? [JSON])?.first?["emailAddress"] == nil && (byID["users"] as? [JSON])?.count == 1)

            _ = try await bobClient.send(.PUT, "/auth/1/profile", body: AccountProfile(discoverable: false)) as AccountProfile
            #expect((try Self.json(try await fixture.post("users/discover", discover))["users"] as? [JSON])?.isEmpty == true)
            for bad in [#"{"phoneNumber":"call me"}"#, #"{"firstName":"a\u0001"}"#, #"{"discoverable":"yes"}"#] {
                let refused = try await fixture.server.request(.PUT, "/auth/1/profile", session: bob, json: bad)
                #expect(refused.errorCode == .badRequest, "\(bad)")
            }
            #expect(try await fixture.post("users/discover", #"{"lookupInfos":[{}]}"#).errorCode == .badRequest)
            #expect(try await fixture.post("users/discover", discover, anonymous: true).errorCode == .authenticationRequired)
        }
    }

    static func boundary(_ parts: [(headers: String, body: Data)], boundary: String) -> Data {
        var body = Data("preamble\r\n".utf8)
        for part in parts { body += Data("--\(boundary)\r\n\(part.headers)\r\n\r\n".utf8) + part.body + Data("\r\n".utf8) }
        return body + Data("--\(boundary)--\r\n".utf8)
    }

    /// A browser's FormData upload stores the file, not the form around it; raw bodies still work.
    @Test func multipartUploadsStoreTheirFilePart() async throws {
        try await DatabaseFixture.run { fixture in
            func upload(_ body: Data, contentType: String?) async throws -> RawResponse {
                let tokens = try await fixture.post("assets/upload", #"{"tokens":[{"recordType":"Photos","fieldName":"image"}]}"#)
                let url = try #require(try tokens.decode(AssetUploadResponse.self).tokens.first?.url)
                return try await fixture.server.request(
                    .POST, String(url.dropFirst(fixture.server.url.absoluteString.count)),
                    headers: contentType.map { [("Content-Type", $0)] } ?? [],
                    body: body)
            }
            func stored(_ response: RawResponse) async throws -> Data {
                try #require(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
                let receipt = try #require(try response.decode(AssetUploadResult.self).singleFile.receipt)
                let saved = try await fixture.modify(
                    #"{"operations":[{"operationType":"create","record":{"recordType":"Photos","fields":{"image":{"value":{"receipt":"\#(receipt)"},"type":"ASSETID"}}}}]}"#
                )
                guard case .asset(let asset) = saved.first?.record?.fields?["image"], let link = asset.downloadURL else {
                    throw CancellationError()
                }
                return try await fixture.server.request(.GET, String(link.dropFirst(fixture.server.url.absoluteString.count)))
                    .body
            }
            // Binary bytes, with CR LF and near-boundary sequences inside (a client picks a boundary the file lacks).
            let file =
                Data(Secrets.randomBytes(300_000)) + Data("\r\n--XyQ\r\n-XyZ\r--XyZ\n--XyZ".utf8)
                + Data(Secrets.randomBytes(1000))
            let form = Self.boundary(
                [
                    (#"Content-Disposition: form-data; name="note""#, Data("a text field".utf8)),
                    ("Content-Disposition: form-data; name=\"file\"; filename=\"photo.jpg\"\r\nContent-Type: image/jpeg", file),
                ], boundary: "XyZ")
            #expect(try await stored(try await upload(form, contentType: "multipart/form-data; boundary=XyZ")) == file)
            let single = Self.boundary(
                [(#"Content-Disposition: form-data; name="file""#, file)], boundary: "----WebKitFormBoundary7MA4YWxkTrZu0gW")
            #expect(
                try await stored(
                    try await upload(
                        single, contentType: #"multipart/form-data; boundary="----WebKitFormBoundary7MA4YWxkTrZu0gW""#)) == file)
            #expect(try await stored(try await upload(file, contentType: "application/octet-stream")) == file)
            #expect(try await stored(try await upload(file, contentType: nil)) == file)
            let truncated = try await upload(form.prefix(form.count - 40), contentType: "multipart/form-data; boundary=XyZ")
            #expect(truncated.errorCode == .badRequest)
            #expect(
                try await upload(Data("no parts at all".utf8), contentType: "multipart/form-data; boundary=XyZ").errorCode
                    == .badRequest)
        }
    }

    @Test func tokensArePaddedBase64AndEarlierOnesStillWork() async throws {
        try await DatabaseFixture.run { fixture in
            // Ten changes, so that the token's text needs padding.
            let records = (0..<10).map {
                #"{"operationType":"create","record":{"recordType":"Reading","fields":{"n":{"value":\#($0)}}}}"#
            }
            _ = try await fixture.modify(#"{"operations":[\#(records.joined(separator: ","))]}"#)
            let changes = try #require(
                (try Self.json(try await fixture.post("changes/zone", #"{"zones":[{"zoneID":{"zoneName":"_defaultZone"}}]}"#))[
                    "zones"] as? [JSON])?.first)
            let token = try #require(changes["syncToken"] as? String)
            let decoded = String(
                decoding: try #require(Data(base64Encoded: token), "\(token) is standard padded base64"), as: UTF8.self)
            #expect(token.hasSuffix("="))
            // The same position written the way earlier releases did (base64url, unpadded) reads the same.
            let unpadded = Base64.encode(decoded.utf8, .url)
            #expect(unpadded != token)
            for sent in [token, unpadded] {
                let again = try #require(
                    (try Self.json(
                        try await fixture.post(
                            "changes/zone", #"{"zones":[{"zoneID":{"zoneName":"_defaultZone"},"syncToken":"\#(sent)"}]}"#))[
                            "zones"] as? [JSON])?.first)
                #expect((again["records"] as? [Any])?.isEmpty == true && again["syncToken"] as? String == token)
            }
            let database = try Self.json(try await fixture.post("changes/database", "{}"))
            #expect(Data(base64Encoded: try #require(database["syncToken"] as? String)) != nil)
        }
    }

    /// A record elsewhere holds a file another record already holds, through a fresh receipt.
    @Test func assetsAreRereferencedIntoOtherRecords() async throws {
        try await DatabaseFixture.run { fixture in
            let tokens = try await fixture.post("assets/upload", #"{"tokens":[{"recordType":"Photos","fieldName":"image"}]}"#)
            let url = try #require(try tokens.decode(AssetUploadResponse.self).tokens.first?.url)
            let bytes = Data(Secrets.randomBytes(5000))
            let uploaded = try await fixture.server.request(
                .POST, String(url.dropFirst(fixture.server.url.absoluteString.count)), body: bytes)
            let receipt = try #require(try uploaded.decode(AssetUploadResult.self).singleFile.receipt)
            _ = try await fixture.modify(
                #"{"operations":[{"operationType":"create","record":{"recordName":"original","recordType":"Photos","fields":{"image":{"value":{"receipt":"\#(receipt)"},"type":"ASSETID"},"title":{"value":"x"}}}}]}"#
            )
            _ = try await fixture.post(
                "zones/modify", #"{"operations":[\#(ZoneAndChangeTests.zoneOperation("create", "Albums"))]}"#)

            let answer = try await fixture.post(
                "assets/rereference",
                #"{"assets":[{"recordName":"original","fieldName":"image"},{"recordName":"original","fieldName":"title"},{"recordName":"missing","fieldName":"image"}]}"#
            )
            let items = try #require(try Self.json(answer)["assets"] as? [JSON])
            #expect(items.map { $0["serverErrorCode"] as? String } == [nil, "BAD_REQUEST", "NOT_FOUND"])
            #expect(items[0]["type"] as? String == "ASSETID" && items[0]["fieldName"] as? String == "image")
            let fresh = try #require((items[0]["value"] as? JSON)?["receipt"] as? String)
            #expect(fresh != receipt)
            let copy = try await fixture.modify(
                #"{"operations":[{"operationType":"create","record":{"recordName":"copy","recordType":"Photos","fields":{"image":{"value":{"receipt":"\#(fresh)"},"type":"ASSETID"}}}}],"zoneID":{"zoneName":"Albums"}}"#
            )
            guard case .asset(let asset) = copy.first?.record?.fields?["image"], let link = asset.downloadURL else {
                Issue.record("the copy holds no asset: \(copy)")
                return
            }
            #expect(
                try await fixture.server.request(.GET, String(link.dropFirst(fixture.server.url.absoluteString.count))).body
                    == bytes)

            // Another user cannot take the file: they cannot read the record, and the receipt is not theirs.
            let bob = try await fixture.server.signIn(email: "bob@example.com", device: "laptop")
            let foreign = try await fixture.post(
                "assets/rereference", #"{"assets":[{"recordName":"original","fieldName":"image"}]}"#, session: bob)
            #expect((try Self.json(foreign)["assets"] as? [JSON])?.first?["serverErrorCode"] as? String == "NOT_FOUND")
            let stolen = try await fixture.post(
                "records/modify",
                #"{"operations":[{"operationType":"create","record":{"recordType":"Photos","fields":{"image":{"value":{"receipt":"\#(fresh)"},"type":"ASSETID"}}}}]}"#,
                session: bob)
            #expect(stolen.errorCode == .badRequest)
        }
    }

    /// CloudKit JS's `registerForNotifications`: a token and a courier URL, long-polled for the
    /// notifications of the user's subscriptions.
    @Test func webClientsLongPollTheirNotifications() async throws {
        let server = try await TestServer.start { $0.courierPollTimeout = .milliseconds(300) }
        let fixture = DatabaseFixture(
            server: server, app: try await server.seedApp(),
            ann: try await server.signIn(email: "ann@example.com", device: "phone"))
        do {
            let tokensPath = "/database/1/\(fixture.app.container)/development/tokens/"
            let credentials =
                "?ckAPIToken=\(fixture.app.apiToken)&ckWebAuthToken=" + fixture.ann.sessionToken.addingPercentEncoding(
                    withAllowedCharacters: .alphanumerics)!
            let created = try Self.json(
                try await server.request(
                    .POST, tokensPath + "create" + credentials, body: Data(#"{"apnsEnvironment":"development"}"#.utf8)))
            let token = try #require(created["apnsToken"] as? String)
            let courier = try #require(created["webcourierURL"] as? String)
            #expect(courier.hasPrefix("http://127.0.0.1:\(server.port)/push/1/courier/"))
            let poll = String(courier.dropFirst(server.url.absoluteString.count))
            #expect(try await server.request(.GET, poll).status == 204, "nothing registered, nothing to hear")

            let register = try await server.request(
                .POST, tokensPath + "register" + credentials, body: Data(#"{"apnsToken":"\#(token)"}"#.utf8))
            #expect(register.status == 200)
            _ = try await fixture.post(
                "subscriptions/modify",
                #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"everything","subscriptionType":"zone"}}]}"#
            )
            // A poll waiting when the change commits hears of it; one that comes after finds it kept.
            let waiting = Task { try await server.request(.GET, poll) }
            _ = try await fixture.modify(WireValueTests.create("first", fields: #""n":{"value":1}"#))
            let heard = try await waiting.value
            #expect(heard.status == 200)
            #expect(try Self.json(heard)["subscriptionID"] as? String == "everything")
            _ = try await fixture.modify(WireValueTests.create("second", fields: #""n":{"value":2}"#))
            let kept = try await server.request(.GET, poll)
            #expect(kept.status == 200)
            #expect((try Self.json(kept)["notificationType"] as? String) == "recordZone")

            let bob = try await server.signIn(email: "bob@example.com", device: "laptop")
            let bobs = try await server.request(
                .POST, tokensPath + "register?ckAPIToken=\(fixture.app.apiToken)",
                headers: [("Authorization", "Bearer \(bob.sessionToken)")],
                body: Data(#"{"apnsToken":"\#(token)"}"#.utf8))
            #expect(bobs.errorCode == .notFound, "a token is registered only by the user who created it")
            #expect(try await server.request(.GET, "/push/1/courier/" + String(repeating: "0", count: 64)).errorCode == .notFound)
            let production = try await server.request(
                .POST, tokensPath + "create" + credentials, body: Data(#"{"apnsEnvironment":"production"}"#.utf8))
            #expect(production.errorCode == .badRequest)
        } catch {
            Issue.record(error)
        }
        await server.stop()
    }
}
