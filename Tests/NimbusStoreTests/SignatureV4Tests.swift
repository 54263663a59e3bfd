import Foundation
import Testing

@testable import NimbusStore

/// The signer against AWS's published Signature Version 4 test suite (credentials `AKIDEXAMPLE`, region
/// `us-east-1`, service `service`, 2015-08-30 12:36:00 UTC): the cases whose rules S3 shares (S3 neither
/// normalizes nor double-encodes paths, so the suite's path-normalization cases do not apply).
@Suite struct SignatureV4Tests {
    static let signer = SignatureV4(
        accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", region: "us-east-1",
        service: "service")
    static let amzDate = "20150830T123600Z"
    static let baseHeaders = [(name: "Host", value: "example.amazonaws.com"), (name: "X-Amz-Date", value: amzDate)]

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var method = "GET"
        var path = "/"
        var query: [(name: String, value: String)] = []
        var extraHeaders: [(name: String, value: String)] = []
        var signedHeaders = "host;x-amz-date"
        var signature: String
        var testDescription: String { name }
    }

    static let cases = [
        Case(name: "get-vanilla", signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        Case(
            name: "get-vanilla-query-order-key-case", query: [("Param2", "value2"), ("Param1", "value1")],
            signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
        Case(name: "get-utf8", path: "/\u{1234}", signature: "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"),
        Case(
            name: "get-header-value-trim", extraHeaders: [("My-Header1", " value1"), ("My-Header2", " \"a   b   c\"")],
            signedHeaders: "host;my-header1;my-header2;x-amz-date",
            signature: "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"),
        Case(
            name: "post-vanilla-query", method: "POST", query: [("Param1", "value1")],
            signature: "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"),
    ]

    @Test(arguments: cases)
    func signsAsTheSuiteDoes(_ test: Case) {
        let request = SignatureV4.Request(
            method: test.method, path: test.path, query: test.query, headers: Self.baseHeaders + test.extraHeaders,
            payloadHash: SignatureV4.emptyPayloadHash)
        #expect(
            Self.signer.authorization(request, amzDate: Self.amzDate)
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                + "SignedHeaders=\(test.signedHeaders), Signature=\(test.signature)")
    }

    @Test func theCanonicalRequestIsTheSuites() {
        let request = SignatureV4.Request(
            method: "GET", path: "/", query: [("Param2", "value2"), ("Param1", "value1")], headers: Self.baseHeaders,
            payloadHash: SignatureV4.emptyPayloadHash)
        #expect(
            SignatureV4.canonicalRequest(request).text
                == "GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n"
                + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SignatureV4.amzDate(Date(timeIntervalSince1970: 1_440_938_160)) == "20150830T123600Z")
        #expect(SignatureV4.encode("a b/c~d") == "a%20b%2Fc~d")
    }
}
