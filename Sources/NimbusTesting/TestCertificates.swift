import Crypto
import Foundation
import NimbusServer
import SwiftASN1
import X509
import _CryptoExtras

/// A throwaway public key infrastructure for tests of HTTPS: a root authority, an intermediate it
/// signed, and a server certificate for `localhost` and 127.0.0.1 the intermediate signed, written as
/// PEM files the way an operator gets them (the chain file holds the server's certificate, then the
/// intermediate; clients trust the root).
package struct TestCertificates: Sendable {
    package enum KeyKind: String, Sendable, CaseIterable {
        case ecdsa, rsa
    }

    package let authority: URL
    package let chain: URL
    package let key: URL

    package init(authority: URL, chain: URL, key: URL) {
        self.authority = authority
        self.chain = chain
        self.key = key
    }

    package var files: ServerCertificates.Files { ServerCertificates.Files(certificateChain: chain, privateKey: key) }

    /// Makes a new authority and a server certificate with a `kind` key for `names` (nil: `localhost` and
    /// 127.0.0.1), in `directory`.
    package static func make(
        in directory: URL, key kind: KeyKind = .ecdsa, name: String = "Nimbus test", names: [String]? = nil
    ) throws -> TestCertificates {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let now = Date()
        let rootKey = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let rootName = try DistinguishedName { CommonName("\(name) root") }
        let root = try authorityCertificate(
            subject: rootName, key: rootKey.publicKey, issuer: rootName, signer: rootKey, now: now)
        let intermediateKey = Certificate.PrivateKey(P256.Signing.PrivateKey())
        let intermediate = try authorityCertificate(
            subject: try DistinguishedName { CommonName("\(name) intermediate") }, key: intermediateKey.publicKey,
            issuer: rootName, signer: rootKey, now: now)
        let serverKey: Certificate.PrivateKey =
            switch kind {
            case .ecdsa: Certificate.PrivateKey(P256.Signing.PrivateKey())
            case .rsa: Certificate.PrivateKey(try _RSA.Signing.PrivateKey(keySize: .bits2048))
            }
        let server = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: serverKey.publicKey, notValidBefore: now - 3600,
            notValidAfter: now + 86400, issuer: intermediate.subject, subject: try DistinguishedName { CommonName("localhost") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true, keyEncipherment: kind == .rsa))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(
                    names.map { $0.map { .dnsName($0) } }
                        ?? [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
            }, issuerPrivateKey: intermediateKey)
        let certificates = TestCertificates(
            authority: directory.appendingPathComponent("ca.pem"), chain: directory.appendingPathComponent("chain.pem"),
            key: directory.appendingPathComponent("key.pem"))
        try Data(try root.serializeAsPEM().pemString.utf8).write(to: certificates.authority)
        let chainText = try server.serializeAsPEM().pemString + "\n" + intermediate.serializeAsPEM().pemString + "\n"
        try Data(chainText.utf8).write(to: certificates.chain)
        try Data(try serverKey.serializeAsPEM().pemString.utf8).write(to: certificates.key)
        return certificates
    }

    private static func authorityCertificate(
        subject: DistinguishedName, key: Certificate.PublicKey, issuer: DistinguishedName, signer: Certificate.PrivateKey,
        now: Date
    ) throws -> Certificate {
        try Certificate(
            version: .v3, serialNumber: .init(), publicKey: key, notValidBefore: now - 3600, notValidAfter: now + 86400,
            issuer: issuer, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }, issuerPrivateKey: signer)
    }
}
