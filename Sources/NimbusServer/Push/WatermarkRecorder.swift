import Logging
import NimbusStore
import ServiceLifecycle
import Synchronization

/// Devices' acknowledgements ("applied the zone up to change N"), written to the store together.
///
/// Every device acknowledges every change it applies, and each write waits for a disk sync, which
/// would put one or two extra commits in the way of each user write. An acknowledgement only says how
/// far a device has got, and the device sends a newer one with its next change, so they are gathered
/// for up to `delay` and written in one transaction. Readers call `flush()` first; a crash loses at
/// most the last `delay` of them.
final class WatermarkRecorder: Sendable {
    private struct Pending {
        var marks: [Key: Int64] = [:]
        var flushScheduled = false
    }

    private struct Key: Hashable {
        var deviceID: String
        var zone: ZoneKey
    }

    private let pending = Mutex(Pending())
    private let store: any Store
    private let delay: Duration
    private let logger: Logger

    init(store: any Store, delay: Duration, logger: Logger) {
        self.store = store
        self.delay = delay
        self.logger = logger
    }

    func note(_ mark: DeviceWatermark) {
        let schedule = pending.withLock { pending in
            let key = Key(deviceID: mark.deviceID, zone: mark.zone)
            pending.marks[key] = max(pending.marks[key] ?? mark.sequence, mark.sequence)
            defer { pending.flushScheduled = true }
            return !pending.flushScheduled
        }
        guard schedule else { return }
        Task {
            try? await Task.sleep(for: delay)
            await flush()
        }
    }

    /// How many (device, zone) acknowledgements wait to be written.
    var pendingCount: Int { pending.withLock { $0.marks.count } }

    /// Writes the acknowledgements gathered so far.
    func flush() async {
        let marks = pending.withLock { pending in
            defer { pending = Pending() }
            return pending.marks.map { DeviceWatermark(deviceID: $0.key.deviceID, zone: $0.key.zone, sequence: $0.value) }
        }
        do {
            try await store.recordWatermarks(marks)
        } catch {
            logger.warning("device acknowledgements not recorded", metadata: ["count": "\(marks.count)", "error": "\(error)"])
        }
    }
}

/// Writes the acknowledgements still gathered when the server shuts down.
struct WatermarkShutdown: Service {
    let recorder: WatermarkRecorder

    func run() async throws {
        try? await gracefulShutdown()
        await recorder.flush()
    }
}
