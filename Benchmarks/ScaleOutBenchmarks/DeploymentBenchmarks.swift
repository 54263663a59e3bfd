import BenchmarkSupport
import Foundation
import NIOCore
import NimbusCore
import NimbusKit
import NimbusStore
import NimbusTestingCore
import Synchronization

extension ScaleOutBenchmarks {
    /// Blobs in SeaweedFS (S3) beside the local folder, in one run: a 50 MB asset and a 256 MB document up
    /// and down through each, with the object store's own rate from this machine as the floor (a multipart
    /// PUT in the server's 8 MiB parts, a streamed GET).
    static func objectStoreRows(localFolder: ServerProcess, nimbus: URL, into table: inout ResultTable) async throws {
        let objects = try await TemporarySeaweedFS.start()
        defer { objects.stop() }
        let bucket = try await nodeBucket(objects)
        let floor = try await rawObjectStoreRates(bucket, bytes: 64 << 20, rounds: 3)
        table.add(
            "Floor: SeaweedFS from this machine, 64 MiB PUT in 8 MiB parts / GET (MB/s, median of 3)",
            String(format: "%.0f / %.0f MB/s", floor.put, floor.get), target: "(reference)", met: true)
        let small = try await rawSmallObjectRates(bucket, count: 64, bytes: 1 << 20)
        table.add(
            "Floor: SeaweedFS from this machine, 64 objects of 1 MiB (a document's average chunk) PUT / GET one after another",
            String(format: "%.0f / %.0f MB/s", small.put, small.get), target: "(reference)", met: true)
        let bundle = try await bundleLoad(bucket, count: 256, bytes: 4096)
        table.add(
            "A bundle of 256 chunks of 4 KiB (small files): S3BlobStore.load / GET one after another",
            String(format: "%.1f / %.1f ms (%.1f×)", bundle.load, bundle.sequential, bundle.sequential / bundle.load),
            target: "(reference)", met: true)
        let s3 = try await ServerProcess(
            nimbus: nimbus, port: port(), extraArguments: limits + ["--blobs", "s3://nimbus/node/"] + bucketArguments(objects))
        defer { s3.stop() }
        for (name, node) in [("local folder", localFolder), ("SeaweedFS", s3)] {
            progress("assets and a 256 MB document on the \(name)")
            let session = try await node.signIn("objects@bench.local", device: "bench")
            let database = CloudContainer(identifier: node.container, session: session, apiToken: node.apiToken)
                .privateCloudDatabase
            let (up, down) = try await Transfers.assetRates(database, rounds: 3)
            table.add(
                "Asset of 50 MB up / down, \(name) (MB/s, median of 3)",
                String(format: "%.0f / %.0f MB/s", Percentiles(up).at(50), Percentiles(down).at(50)), target: "(reference)",
                met: true)
            let pair = try await DevicePair(node, name: "large-\(UUIDString.random().prefix(8))")
            let size = 256 << 20
            let (docUp, docDown) = try await Transfers.largeFile(pair, bytes: size)
            table.add(
                "Document of 256 MB up / down through the engines, \(name) (MB/s)",
                String(format: "%.0f / %.0f MB/s", Double(size) / docUp / 1_048_576, Double(size) / docDown / 1_048_576),
                target: "(reference)", met: true)
        }
    }

    /// The bucket the benchmarks' nodes keep their blobs in (`s3://nimbus/node/`), made on `objects`.
    static func nodeBucket(_ objects: TemporarySeaweedFS) async throws -> S3Client.Location {
        let bucket = S3Client.Location(
            endpoint: objects.endpoint, bucket: "nimbus", prefix: "node/", accessKeyID: objects.accessKeyID,
            secretAccessKey: objects.secretAccessKey)
        try await S3Client(bucket).createBucket()
        return bucket
    }

    /// The options that name `objects` to a `nimbus` command, beside `--blobs`.
    static func bucketArguments(_ objects: TemporarySeaweedFS) -> [String] {
        [
            "--blobs-endpoint", objects.endpoint.absoluteString, "--blobs-access-key-id", objects.accessKeyID,
            "--blobs-secret-access-key", objects.secretAccessKey,
        ]
    }

    /// MB/s of `rounds` objects of `bytes` written as the server writes a large blob (a multipart upload of
    /// 8 MiB parts, one after another) and read back whole, medians.
    static func rawObjectStoreRates(_ bucket: S3Client.Location, bytes: Int, rounds: Int) async throws -> (
        put: Double, get: Double
    ) {
        let client = S3Client(bucket)
        let part = ByteBuffer(bytes: (0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 131) })
        var puts = [Double]()
        var gets = [Double]()
        for round in 0..<rounds {
            let key = "floor-\(round)"
            let start = ContinuousClock.now
            let upload = try await client.startUpload(key)
            var tags = [String]()
            for number in 1...(bytes / part.readableBytes) {
                tags.append(try await client.uploadPart(key, upload: upload, number: number, part))
            }
            try await client.completeUpload(key, upload: upload, parts: tags)
            puts.append(Double(bytes) / ((ContinuousClock.now - start).milliseconds / 1000) / 1_048_576)
            let getStart = ContinuousClock.now
            var received = 0
            try await client.get(key) { received += $0.readableBytes }
            guard received == bytes else { throw BenchmarkError("read \(received) of \(bytes) bytes back") }
            gets.append(Double(bytes) / ((ContinuousClock.now - getStart).milliseconds / 1000) / 1_048_576)
            try await client.delete(key)
        }
        return (Percentiles(puts).at(50), Percentiles(gets).at(50))
    }

    /// MB/s of `count` objects of `bytes` each put and then read back one after another, as a document's
    /// chunks are: each its own request.
    /// Milliseconds to read `count` objects of `bytes` through `S3BlobStore.load` (as the server reads a bundle
    /// of small files' chunks) and one after another with the same client, the medians of five rounds.
    static func bundleLoad(_ bucket: S3Client.Location, count: Int, bytes: Int) async throws -> (load: Double, sequential: Double)
    {
        let client = S3Client(bucket)
        let gate = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-bench-\(UUIDString.random()).lock")
        defer { try? FileManager.default.removeItem(at: gate) }
        let store = S3BlobStore(client: client, decisions: ProcessDecisionLock(sweepGate: gate))
        let ids = (0..<count).map { _ in Secrets.apiToken() }
        for id in ids { try await client.put(id, ByteBuffer(bytes: (0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 7) })) }
        var (loads, sequential) = ([Double](), [Double]())
        for _ in 0..<5 {
            let start = ContinuousClock.now
            guard try await store.load(ids, maxBytes: count * bytes).count == count else {
                throw BenchmarkError("a bundle's objects did not all load")
            }
            loads.append((ContinuousClock.now - start).milliseconds)
            let one = ContinuousClock.now
            for id in ids { try await client.get(id) { _ in } }
            sequential.append((ContinuousClock.now - one).milliseconds)
        }
        for id in ids { try await client.delete(id) }
        return (Percentiles(loads).at(50), Percentiles(sequential).at(50))
    }

    static func rawSmallObjectRates(_ bucket: S3Client.Location, count: Int, bytes: Int) async throws
        -> (put: Double, get: Double)
    {
        let client = S3Client(bucket)
        let start = ContinuousClock.now
        for number in 0..<count {
            var body = ByteBuffer(bytes: (0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 131) })
            body.setInteger(UInt64(number), at: 0)
            try await client.put("small-\(number)", body)
        }
        let put = Double(count * bytes) / ((ContinuousClock.now - start).milliseconds / 1000) / 1_048_576
        let getStart = ContinuousClock.now
        for number in 0..<count {
            var received = 0
            try await client.get("small-\(number)") { received += $0.readableBytes }
            guard received == bytes else { throw BenchmarkError("read \(received) of \(bytes) bytes back") }
        }
        let get = Double(count * bytes) / ((ContinuousClock.now - getStart).milliseconds / 1000) / 1_048_576
        for number in 0..<count { try await client.delete("small-\(number)") }
        return (put, get)
    }

    /// The reference deployment's shape (three nodes naming a PostgreSQL primary and its synchronous standby,
    /// blobs in SeaweedFS): what synchronous replication costs a write (the same cluster with the standby
    /// synchronous and not, alternately), 64 clients through the three nodes, and a failover's time (the
    /// primary killed → the standby promoted → the first write acknowledged on it).
    static func deploymentRows(nimbus: URL, into table: inout ResultTable) async throws {
        let primary = try await TemporaryPostgres.dedicated()
        let url = try await primary.database()
        let standby = try await primary.standby(synchronous: true)
        let both =
            url.replacingOccurrences(
                of: "127.0.0.1:\(primary.port)/", with: "127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/")
            + "&target_session_attrs=read-write"
        let objects = try await TemporarySeaweedFS.start()
        defer { objects.stop() }
        try await S3Client(
            S3Client.Location(
                endpoint: objects.endpoint, bucket: "nimbus", accessKeyID: objects.accessKeyID,
                secretAccessKey: objects.secretAccessKey)
        ).createBucket()
        let blobs = [
            "--blobs", "s3://nimbus/", "--blobs-endpoint", objects.endpoint.absoluteString, "--blobs-access-key-id",
            objects.accessKeyID, "--blobs-secret-access-key", objects.secretAccessKey,
        ]
        var nodes = [try await ServerProcess(nimbus: nimbus, port: port(), extraArguments: limits + blobs, database: both)]
        for _ in 1..<3 {
            nodes.append(
                try await ServerProcess(
                    joining: nodes[0], database: both, nimbus: nimbus, port: port(), extraArguments: limits + blobs))
        }
        defer { for node in nodes.reversed() { node.stop() } }

        progress("measuring what synchronous replication costs")
        var rates: [Bool: [Double]] = [:]
        var commits: [Bool: [Double]] = [:]
        for round in 0..<4 {
            let synchronous = round % 2 == 0
            try await primary.synchronousReplication(synchronous)
            commits[synchronous, default: []].append(try await PostgresFloor.oneRowCommitMicroseconds(url, count: 1000))
            let run = try await KeyValueLoad.writes(through: [nodes[0]], clients: 1, batchesPerClient: 1000)
            rates[synchronous, default: []].append(run.batchesPerSecond)
        }
        for synchronous in [false, true] {
            let label = synchronous ? "synchronous standby" : "asynchronous standby"
            table.add(
                "PostgreSQL one-row commit, \(label) (µs, 2 rounds)",
                commits[synchronous]!.map { String(format: "%.0f", $0) }.joined(separator: ", "), target: "(reference)", met: true
            )
            table.add(
                "Key-value sequential batches/s through a node, \(label) (2 rounds)",
                rates[synchronous]!.map { String(format: "%.0f", $0) }.joined(separator: ", "), target: "(reference)", met: true)
        }
        let cost = Percentiles(rates[true]!).at(50) / Percentiles(rates[false]!).at(50)
        table.add(
            "Key-value sequential, synchronous / asynchronous standby", String(format: "%.2f", cost), target: "(reference)",
            met: true)

        progress("measuring 64 clients through the reference deployment")
        let run = try await KeyValueLoad.writes(through: nodes, clients: 64, batchesPerClient: 200)
        table.add(
            "Reference deployment (3 nodes, synchronous standby, S3), 64 clients: batches/s, p50 / p99",
            String(format: "%.0f, %.1f / %.1f ms", run.batchesPerSecond, run.latencies.at(50), run.latencies.at(99)),
            target: "(reference)", met: true)

        progress("measuring a failover")
        let failover = try await failoverSeconds(primary: primary, standby: standby, through: nodes[0])
        table.add(
            "Failover: primary killed → standby promoted → first write acknowledged (s, one run)",
            String(format: "%.2f → %.2f s", failover.promoted, failover.firstWrite), target: "(reference)", met: true)
    }

    /// One client writing through `node` without pause; the primary is killed (as its machine would be lost)
    /// and the standby promoted: seconds from the kill to the promotion's end and to the first write
    /// acknowledged after the kill.
    static func failoverSeconds(primary: TemporaryPostgres, standby: TemporaryPostgres, through node: ServerProcess)
        async throws -> (promoted: Double, firstWrite: Double)
    {
        let session = try await node.signIn("failover@bench.local", device: "bench")
        let client = KeyValueClient(
            client: NimbusClient(session: session, apiToken: node.apiToken), storeIdentifier: node.storeIdentifier)
        let acknowledged = Mutex<[ContinuousClock.Instant]>([])
        let stopped = Atomic(false)
        let writer = Task {
            var value: Int64 = 0
            while !stopped.load(ordering: .relaxed) {
                value += 1
                if (try? await client.modify([.set("failover", .int64(value))])) != nil {
                    acknowledged.withLock { $0.append(.now) }
                } else {
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
        }
        defer {
            stopped.store(true, ordering: .relaxed)
            writer.cancel()
        }
        try await Task.sleep(for: .seconds(2))
        let killed = ContinuousClock.now
        try await primary.stop(immediately: true)
        try await standby.promote()
        let promoted = ContinuousClock.now
        let deadline = killed + .seconds(120)
        while ContinuousClock.now < deadline {
            if let first = acknowledged.withLock({ $0.first { $0 > promoted } }) {
                return ((promoted - killed).milliseconds / 1000, (first - killed).milliseconds / 1000)
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw BenchmarkError("no write was acknowledged within 2 minutes of the failover")
    }
}
