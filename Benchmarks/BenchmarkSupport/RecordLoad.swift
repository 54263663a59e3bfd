import Foundation
import NimbusCore
import NimbusKit

/// Record saves the benchmarks time.
package enum RecordLoad {
    /// A new record of the kind the save benchmarks write: one short text field.
    package static func note() -> Record {
        var record = Record(recordType: "Notes")
        record["text"] = "a note"
        return record
    }

    package static func sequentialSaves(_ database: CloudDatabase, count: Int) async throws -> Double {
        let start = ContinuousClock.now
        for _ in 0..<count {
            _ = try await database.save(note())
        }
        return Double(count) / ((ContinuousClock.now - start).milliseconds / 1000)
    }

    package static func batchedSaves(_ database: CloudDatabase, batches: Int) async throws -> Double {
        let start = ContinuousClock.now
        for _ in 0..<batches {
            let (saved, _) = try await database.modifyRecords(
                saving: (0..<200).map { _ in note() }, deleting: [], savePolicy: .allKeys)
            guard saved.count == 200 else { throw NimbusError(.internalError, "a batch lost records") }
        }
        return Double(batches * 200) / ((ContinuousClock.now - start).milliseconds / 1000)
    }
}
