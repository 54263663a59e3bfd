import Foundation
import Logging
import NimbusPostgres
import PostgresNIO

/// PostgreSQL's own floor, from the same client language and driver as the server: the mean time to
/// commit one row, each `INSERT … ON CONFLICT` its own transaction, with `synchronous_commit` on (as
/// every Nimbus connection sets it).
enum PostgresFloor {
    static func oneRowCommitMicroseconds(_ url: String, count: Int) async throws -> Double {
        let location = try PostgresLocation(url: url)
        var configuration = PostgresConnection.Configuration(
            host: location.servers[0].host, port: location.servers[0].port, username: location.user, password: location.password,
            database: location.database, tls: .disable)
        configuration.options.additionalStartupParameters = [("synchronous_commit", "on")]
        let logger = Logger(label: "floor")
        let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
        defer { Task { try? await connection.close() } }
        _ = try await connection.query(
            "CREATE TABLE IF NOT EXISTS commit_floor (key text PRIMARY KEY, payload bytea, sequence bigint)", logger: logger)
        let payload = ByteBuffer(repeating: 0, count: 100)
        func commit(_ sequence: Int) async throws {
            _ = try await connection.query(
                """
                INSERT INTO commit_floor VALUES (\("key-\(sequence % 1000)"), \(payload), \(Int64(sequence)))
                ON CONFLICT (key) DO UPDATE SET payload = excluded.payload, sequence = excluded.sequence
                """, logger: logger
            ).collect()
        }
        for sequence in 0..<200 { try await commit(sequence) }  // warm up
        let start = ContinuousClock.now
        for sequence in 0..<count { try await commit(sequence) }
        let elapsed = ContinuousClock.now - start
        _ = try await connection.query("DROP TABLE commit_floor", logger: logger)
        return (Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12) / Double(count)
    }
}
