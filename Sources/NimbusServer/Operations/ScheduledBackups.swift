import Foundation
import Logging
import NimbusStore
import ServiceLifecycle

/// Backs the data directory up every `interval` while the server runs (`serve --backup-every`), keeping
/// the newest `keep`. A failed backup is logged and tried again at the next interval.
struct ScheduledBackups: Service {
    let data: EmbeddedDataDirectory
    let blobs: any BlobStore
    let destination: URL
    let interval: Duration
    let keep: Int?
    let logger: Logger

    func run() async throws {
        await periodically(every: interval) {
            let (data, destination, keep) = (data, destination, keep)
            let started = ContinuousClock.now
            do {
                let manifest = try await EmbeddedBackup.create(of: data, blobs: blobs, to: destination, keep: keep)
                logger.notice(
                    "backed up the data",
                    metadata: [
                        "backup": .string(destination.appendingPathComponent(manifest.id).path),
                        "entries": .stringConvertible(manifest.counts.entries),
                        "blobs": .stringConvertible(manifest.counts.blobs),
                        "seconds": .stringConvertible((ContinuousClock.now - started).seconds),
                    ])
            } catch {
                logger.error("backup failed", metadata: ["destination": .string(destination.path), "error": "\(error)"])
            }
        }
    }
}
