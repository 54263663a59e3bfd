import Foundation
import Logging
import NIOSSL
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The certificate chain and private key `serve --tls-cert/--tls-key` name (PEM; RSA or ECDSA), kept
/// current: reloaded on SIGHUP and when either file changes (a renewal replacing them), without a restart.
/// New connections get the new certificate; open ones keep theirs. A file that does not load, or a key that
/// is not the certificate's, is logged and the previous pair kept, so a half-done renewal never takes the
/// server down.
package final class ServerCertificates: Sendable {
    package struct Files: Sendable, Hashable {
        package var certificateChain: URL
        package var privateKey: URL

        package init(certificateChain: URL, privateKey: URL) {
            self.certificateChain = certificateChain
            self.privateKey = privateKey
        }
    }

    private struct Loaded {
        var chain: [NIOSSLCertificate]
        var key: NIOSSLPrivateKey
        /// What the files looked like when read, to notice a change.
        var stamps: [FileStamp]
        /// Counts reloads, so a handshake changes nothing while the pair is the one its context was built with.
        var generation = 0
    }

    private struct FileStamp: Equatable {
        var inode: UInt64
        var size: Int64
        var modified: timespec

        static func == (a: FileStamp, b: FileStamp) -> Bool {
            a.inode == b.inode && a.size == b.size && a.modified.tv_sec == b.modified.tv_sec
                && a.modified.tv_nsec == b.modified.tv_nsec
        }

        init?(_ url: URL) {
            var status = stat()
            guard stat(url.path, &status) == 0 else { return nil }
            inode = UInt64(status.st_ino)
            size = Int64(status.st_size)
            modified = status.st_mtim
        }
    }

    package let files: Files
    private let current: Mutex<Loaded>

    /// Loads the pair now; throws a clear error when it cannot be served.
    package init(files: Files) throws {
        self.files = files
        current = Mutex(try Self.load(files))
    }

    private static func load(_ files: Files) throws -> Loaded {
        let stamps = [FileStamp(files.certificateChain), FileStamp(files.privateKey)].compactMap { $0 }
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificateChain.path)
        } catch {
            throw CertificateError("\(files.certificateChain.path) holds no PEM certificate chain (\(error))")
        }
        guard !chain.isEmpty else { throw CertificateError("\(files.certificateChain.path) holds no certificate") }
        do {
            // Without a callback, an encrypted key would make the TLS library prompt on the terminal; with
            // one that gives no passphrase, it fails to load.
            key = try NIOSSLPrivateKey(file: files.privateKey.path, format: .pem) { (_: NIOSSLPassphraseSetter<[UInt8]>) in }
        } catch {
            throw CertificateError(
                "\(files.privateKey.path) holds no unencrypted PEM private key (RSA or ECDSA) (\(error))")
        }
        do {
            // A context refuses a key that does not belong to the chain's first certificate.
            _ = try NIOSSLContext(configuration: configuration(chain: chain, key: key))
        } catch {
            throw CertificateError(
                "the key in \(files.privateKey.path) is not the one of the certificate in \(files.certificateChain.path) (\(error))"
            )
        }
        return Loaded(chain: chain, key: key, stamps: stamps)
    }

    private static func configuration(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }

    /// The server's TLS configuration: each handshake takes the pair current at that moment.
    package func tlsConfiguration() -> TLSConfiguration {
        let loaded = current.withLock { $0 }
        var configuration = Self.configuration(chain: loaded.chain, key: loaded.key)
        configuration.sslContextCallback = { [self, built = loaded.generation] _, promise in
            let loaded = self.current.withLock { $0 }
            guard loaded.generation != built else { return promise.succeed(.noChanges) }
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = loaded.chain.map { .certificate($0) }
            override.privateKey = .privateKey(loaded.key)
            promise.succeed(override)
        }
        return configuration
    }

    /// Reads the files again; `force` reloads even when they look unchanged (SIGHUP). Whether it loaded a new pair.
    @discardableResult
    package func reload(force: Bool, logger: Logger) -> Bool {
        let stamps = [FileStamp(files.certificateChain), FileStamp(files.privateKey)].compactMap { $0 }
        guard force || stamps != current.withLock({ $0.stamps }) else { return false }
        do {
            var loaded = try Self.load(files)
            current.withLock {
                loaded.generation = $0.generation + 1
                $0 = loaded
            }
            logger.notice("loaded the TLS certificate", metadata: ["certificate": .string(files.certificateChain.path)])
            return true
        } catch {
            // Remember what was seen, so a broken file is reported once, not at every look.
            current.withLock { $0.stamps = stamps }
            logger.error("kept the previous TLS certificate: \(error)")
            return false
        }
    }
}

package struct CertificateError: Error, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = description }
}

/// Reloads the certificates on SIGHUP, and when their files change (looked at every `interval`, if any).
struct CertificateReloading: Service {
    let certificates: ServerCertificates
    let interval: Duration?
    let logger: Logger

    func run() async throws {
        let signals = await UnixSignalsSequence(trapping: .sighup)
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in signals { certificates.reload(force: true, logger: logger) }
                }
                if let interval {
                    group.addTask {
                        while (try? await Task.sleep(for: interval)) != nil {
                            certificates.reload(force: false, logger: logger)
                        }
                    }
                }
                await group.waitForAll()
            }
        }
    }
}
