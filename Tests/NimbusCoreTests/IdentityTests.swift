import Foundation
import NimbusCore
import NimbusTestingCore
import Testing

@Suite(.cleansUp) struct ChangeTokenTests {
    @Test func tokensRoundTripAndLookOpaque() throws {
        let token = ChangeToken(zoneID: 42, sequence: 9001)
        #expect(try ChangeToken(encoded: token.encoded) == token)
        #expect(!token.encoded.contains("9001"))
    }

    /// Tokens are standard padded base64, which clients that peek inside decode without surprise; the
    /// unpadded base64url tokens of earlier releases still work.
    @Test func tokensArePaddedBase64AndEarlierOnesStillRead() throws {
        let token = ChangeToken(zoneID: 3, sequence: 10)
        #expect(token.encoded == Data("n1.3.10".utf8).base64EncodedString() && token.encoded.hasSuffix("="))
        #expect(try ChangeToken(encoded: "bjEuMy4xMA") == token)
        #expect(try DatabaseChangeToken(encoded: DatabaseChangeToken(sequence: 7).encoded).sequence == 7)
        #expect(try DatabaseChangeToken(encoded: "ZDEuNw").sequence == 7)
    }

    @Test(arguments: ["", "garbage", "bjIuMS4y", String(repeating: "A", count: 400), "bjEueC4y", "bjEuMS4tMw"])
    func foreignStringsAreRefused(_ text: String) {
        let error = #expect(throws: NimbusError.self) { try ChangeToken(encoded: text) }
        #expect(error?.code == .badRequest)
    }
}

@Suite(.cleansUp) struct IdentifierTests {
    @Test func teamIDsAreTenUpperCaseCharacters() throws {
        try Identifiers.validateTeamID("98Z3R5XU29")
        for bad in ["98z3r5xu29", "SHORT", "98Z3R5XU29X", "98Z3R5XU2!"] {
            #expect(throws: NimbusError.self) { try Identifiers.validateTeamID(bad) }
        }
    }

    @Test func containersStartWithICloud() throws {
        try Identifiers.validateContainerID("iCloud.com.example.Cloudy")
        #expect(throws: NimbusError.self) { try Identifiers.validateContainerID("com.example.Cloudy") }
        #expect(throws: NimbusError.self) { try Identifiers.validateContainerID("iCloud.com/../etc") }
    }

    @Test func storeIdentifiersRejectPathTraversal() throws {
        try Identifiers.validateStoreIdentifier("98Z3R5XU29.com.example.Cloudy")
        for bad in ["../etc/passwd", "a..b", "single", "a.b/c"] {
            #expect(throws: NimbusError.self) { try Identifiers.validateStoreIdentifier(bad) }
        }
    }

    @Test func passwordsAreBoundedForBcrypt() throws {
        try Identifiers.validatePassword("12345678")
        #expect(throws: NimbusError.self) { try Identifiers.validatePassword("short") }
        #expect(throws: NimbusError.self) { try Identifiers.validatePassword(String(repeating: "p", count: 73)) }
    }

    /// A generated password is typed on a command line (`nimbus login --password …`): one beginning with `-`
    /// (1 in 64 of base64url's) would be taken for an option there, as a loaded run of the reference deployment
    /// found. Ten thousand of them, none so.
    @Test func generatedPasswordsNeverBeginWithADash() throws {
        for _ in 0..<10_000 {
            let password = Secrets.password()
            #expect(!password.hasPrefix("-"), "\(password)")
            try Identifiers.validatePassword(password)
        }
    }

    @Test func secretsHaveTheirDocumentedShapes() {
        let token = Secrets.apiToken()
        #expect(Secrets.isAPITokenShaped(token))
        #expect(token != Secrets.apiToken())
        #expect(Secrets.userRecordName().count == 33)
        #expect(Secrets.digest("a") != "a" && Secrets.digest("a").count == 64)
    }

    @Test func recordNamesRefuseExactlyTheControlCharacters() throws {
        for value in 0...0x2FFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let name = "item\(Character(scalar))1"
            if scalar.properties.generalCategory == .control {
                #expect(throws: NimbusError.self) { try Identifiers.validateRecordName(name) }
            } else {
                try Identifiers.validateRecordName(name)
            }
        }
        #expect(throws: NimbusError.self) { try Identifiers.validateRecordName("") }
        #expect(throws: NimbusError.self) { try Identifiers.validateRecordName(String(repeating: "é", count: 128)) }
    }

    @Test func generatedRecordNamesAreVersion7UUIDsInCreationOrder() throws {
        let start = Date(timeIntervalSince1970: 1_795_000_000)
        let names = (0..<1000).map { UUIDString.timeOrdered(at: start.addingTimeInterval(Double($0) / 100)).uuidString }
        #expect(names == names.sorted())
        #expect(Set(names).count == names.count)
        let first = try #require(UUID(uuidString: names[0]))
        #expect(first.uuid.6 >> 4 == 7)
        #expect(first.uuid.8 >> 6 == 0b10)
        // The first 48 bits are the creation time in milliseconds.
        #expect(names[0].hasPrefix(String(format: "%08X-%04X", 1_795_000_000_000 >> 16, 1_795_000_000_000 & 0xFFFF)))
    }

    @Test func randomBytesComeInTheLengthAskedAndDoNotRepeat() {
        for length in 0..<40 { #expect(Secrets.randomBytes(length).count == length) }
        let draws = (0..<1000).map { _ in Secrets.randomBytes(13) }
        #expect(Set(draws).count == draws.count)
        // Every byte position varies, the tail of a partly used draw included.
        for position in 0..<13 { #expect(Set(draws.map { $0[position] }).count > 200) }
    }

    @Test func errorsCarryHTTPStatusesOfTheCloudKitTable() {
        #expect(ErrorCode.authenticationRequired.httpStatus == 421)
        #expect(ErrorCode.throttled.httpStatus == 429)
        #expect(ErrorCode.accessDenied.httpStatus == 403)
        #expect(ErrorCode.conflict.httpStatus == 409)
    }
}

@Suite(.cleansUp) struct Base64Tests {
    @Test func bothAlphabetsMatchFoundationsAndReadBack() {
        for length in 0..<40 {
            let bytes = Secrets.randomBytes(length)
            let standard = Data(bytes).base64EncodedString()
            let url = standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64.encode(bytes, .standard) == standard)
            #expect(Base64.encode(bytes, .url) == url)
            #expect(Base64.decode(standard) == bytes && Base64.decode(url) == bytes)
        }
    }

    @Test(arguments: ["a", "ab=c", "é", "abcde", "ab==c===", "a==="])
    func foreignTextDoesNotDecode(_ text: String) {
        #expect(Base64.decode(text) == nil)
    }
}

@Suite(.cleansUp) struct WireTimeTests {
    @Test func theWireRangeRoundTripsExactly() {
        for milliseconds: Int64 in [Date.wireMilliseconds.lowerBound, -1, 0, 1_700_000_000_123, Date.wireMilliseconds.upperBound]
        {
            #expect(Date(wireMilliseconds: milliseconds)?.milliseconds == milliseconds)
        }
        #expect(Date(wireMilliseconds: Date.wireMilliseconds.upperBound + 1) == nil)
        #expect(Date(wireMilliseconds: .min) == nil)
    }

    /// `Date` counts from 2001 in a Double, so far from then a naive conversion lands a millisecond off:
    /// every time accepted from the wire comes back exactly, and only some of the far past are refused.
    @Test func everyAcceptedWireTimeRoundTripsExactly() {
        var random = SeededGenerator(seed: 2026_11_23)
        for _ in 0..<200_000 {
            let milliseconds = Int64.random(in: Date.wireMilliseconds, using: &random)
            if let date = Date(wireMilliseconds: milliseconds) {
                #expect(date.milliseconds == milliseconds)
            } else {
                #expect(milliseconds < -4_397_000_000_000_000, "\(milliseconds) was refused")
            }
        }
        #expect(Date(wireMilliseconds: 4_404_643_816_985_819)?.milliseconds == 4_404_643_816_985_819)
    }

    @Test func anyDateHasMillisecondsWithoutTrapping() {
        #expect(Date(milliseconds: .max).milliseconds == Date.wireMilliseconds.upperBound)
        #expect(Date(timeIntervalSince1970: -1e300).milliseconds == Date.wireMilliseconds.lowerBound)
        #expect(Date(timeIntervalSince1970: .infinity).milliseconds == Date.wireMilliseconds.upperBound)
        #expect(Date.distantFuture.milliseconds == Int64((Date.distantFuture.timeIntervalSince1970 * 1000).rounded()))
    }

    @Test func timestampsBeyondTheRangeAreRefusedByEveryDecoder() throws {
        let record = #"{"recordName":"a","fields":{"when":{"value":9223372036854775807,"type":"TIMESTAMP"}}}"#
        #expect(throws: (any Error).self) { try JSONDecoder().decode(RecordWire.self, from: Data(record.utf8)) }
        let list = #"{"value":[1,8640000000000001],"type":"TIMESTAMP_LIST"}"#
        #expect(throws: (any Error).self) { try JSONDecoder().decode(FieldValue.self, from: Data(list.utf8)) }
        let keyValue = #"{"type":"TIMESTAMP","value":-9223372036854775808}"#
        #expect(throws: (any Error).self) { try KeyValue.decode(Data(keyValue.utf8)) }
        #expect(throws: (any Error).self) { try JSONDecoder().decode(KeyValue.self, from: Data(keyValue.utf8)) }
    }
}
