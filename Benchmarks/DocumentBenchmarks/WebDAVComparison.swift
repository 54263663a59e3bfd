import AsyncHTTPClient
import BenchmarkSupport
import Foundation
import NIOCore
import NimbusCore
import NimbusKit

/// `docs webdav`: Nimbus's `/dav/` beside Apache's mod_dav (Debian's `apache2`, mod_dav_fs) on loopback,
/// through the same client: 1,000 files of 4 KiB put and got with four requests in flight (rclone's
/// default), and one 100 MiB file put and got. Both sign in with HTTP Basic. Nimbus syncs every chunk and
/// every commit before it answers; Apache writes files and answers without a sync: the disk syncs measured in
/// the same run (a 4 KiB write's, a 100 MiB file's) are the floors that difference is bounded by.
struct WebDAVComparison {
    let server: ServerProcess

    static let smallFiles = 1000
    static let smallBytes = 4096
    static let largeBytes = 100 << 20
    static let inFlight = 4

    func run(into table: inout ResultTable) async throws {
        let session = try await server.signIn("webdav@bench.local", device: "settings")
        let password = try await NimbusAccount.createAppPassword(session, name: "benchmark")
        let nimbus = Endpoint(
            base: "\(server.url.absoluteString)/dav/\(server.container)/", user: password.userName,
            password: password.password ?? "")
        let apache = try ApacheDAV.start()
        defer { apache.stop() }
        let sync = try server.syncedWriteMicroseconds(count: 1000)
        table.add(
            "WebDAV floor: 4 KiB write + fdatasync in the data directory", String(format: "%.0f µs", sync),
            target: "(reference)", met: true)
        let largeSync = try server.syncedLargeWriteMebibytesPerSecond(bytes: Self.largeBytes)
        table.add(
            "WebDAV floor: 100 MiB write + fdatasync in the data directory", String(format: "%.0f MiB/s", largeSync),
            target: "(reference)", met: true)
        let client = HTTPClient.shared
        let small = (0..<Self.smallFiles).map { _ in Data(Secrets.randomBytes(Self.smallBytes)) }
        let large = Data(Secrets.randomBytes(Self.largeBytes))
        for (name, endpoint) in [("Nimbus", nimbus), ("Apache mod_dav", apache.endpoint)] {
            let put = try await Self.timed { try await endpoint.putAll(small, client: client) }
            let get = try await Self.timed { try await endpoint.getAll(count: small.count, expecting: small, client: client) }
            let largePut = try await Self.timed { try await endpoint.put("large.bin", large, client: client) }
            let largeGet = try await Self.timed {
                let bytes = try await endpoint.get("large.bin", client: client)
                guard bytes == large else { throw BenchmarkError("\(name) returned other bytes for large.bin") }
            }
            let mebibytes = Double(Self.largeBytes) / Double(1 << 20)
            table.add(
                "WebDAV \(name): 1,000 × 4 KiB PUT, \(Self.inFlight) in flight",
                String(format: "%.0f files/s", Double(Self.smallFiles) / put), target: "(beside Apache)", met: true)
            table.add(
                "WebDAV \(name): 1,000 × 4 KiB GET, \(Self.inFlight) in flight",
                String(format: "%.0f files/s", Double(Self.smallFiles) / get), target: "(beside Apache)", met: true)
            table.add(
                "WebDAV \(name): one 100 MiB PUT", String(format: "%.0f MiB/s", mebibytes / largePut),
                target: "(beside Apache)", met: true)
            table.add(
                "WebDAV \(name): one 100 MiB GET", String(format: "%.0f MiB/s", mebibytes / largeGet),
                target: "(beside Apache)", met: true)
        }
    }

    static func timed(_ body: () async throws -> Void) async throws -> Double {
        let start = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// A WebDAV server's collection and the Basic credentials for it.
    struct Endpoint: Sendable {
        var base: String
        var user: String
        var password: String

        private var authorization: String { "Basic " + Data("\(user):\(password)".utf8).base64EncodedString() }

        func put(_ name: String, _ bytes: Data, client: HTTPClient) async throws {
            var request = HTTPClientRequest(url: base + name)
            request.method = .PUT
            request.headers.add(name: "Authorization", value: authorization)
            request.body = .bytes(ByteBuffer(bytes: bytes))
            let response = try await client.execute(request, timeout: .seconds(600))
            _ = try await response.body.collect(upTo: 1 << 20)
            guard (200..<300).contains(response.status.code) else {
                throw BenchmarkError("PUT \(base + name) answered \(response.status.code)")
            }
        }

        func get(_ name: String, client: HTTPClient) async throws -> Data {
            var request = HTTPClientRequest(url: base + name)
            request.headers.add(name: "Authorization", value: authorization)
            let response = try await client.execute(request, timeout: .seconds(600))
            let body = try await response.body.collect(upTo: 1 << 30)
            guard response.status.code == 200 else { throw BenchmarkError("GET \(base + name) answered \(response.status.code)") }
            return Data(body.readableBytesView)
        }

        func putAll(_ files: [Data], client: HTTPClient) async throws {
            try await inParallel(files.count) { index in try await put("small-\(index).bin", files[index], client: client) }
        }

        func getAll(count: Int, expecting files: [Data], client: HTTPClient) async throws {
            try await inParallel(count) { index in
                guard try await get("small-\(index).bin", client: client) == files[index] else {
                    throw BenchmarkError("GET small-\(index).bin returned other bytes")
                }
            }
        }

        private func inParallel(_ count: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var next = 0
                for _ in 0..<min(WebDAVComparison.inFlight, count) {
                    let index = next
                    group.addTask { try await body(index) }
                    next += 1
                }
                while try await group.next() != nil, next < count {
                    let index = next
                    group.addTask { try await body(index) }
                    next += 1
                }
                try await group.waitForAll()
            }
        }
    }
}

/// Apache httpd with mod_dav_fs serving a temporary folder on a free loopback port, with Basic sign-in from
/// a password file, as its documentation sets WebDAV up.
final class ApacheDAV: @unchecked Sendable {
    let root: URL
    let endpoint: WebDAVComparison.Endpoint
    /// httpd in the foreground, a child of this process: stopped with SIGTERM (its graceful stop).
    private let process: Process

    private init(root: URL, endpoint: WebDAVComparison.Endpoint, process: Process) {
        self.root = root
        self.endpoint = endpoint
        self.process = process
    }

    static func start() throws -> ApacheDAV {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("nimbus-apache-\(UUID().uuidString)")
        let files = root.appendingPathComponent("files")
        for folder in [files, root.appendingPathComponent("lock"), root.appendingPathComponent("run")] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        let port = Int.random(in: 41000...49000)
        let modules = "/usr/lib/apache2/modules"
        let configuration = """
            ServerRoot "\(root.path)"
            ServerName 127.0.0.1
            Listen 127.0.0.1:\(port)
            PidFile "\(root.path)/run/httpd.pid"
            ErrorLog "\(root.path)/error.log"
            LoadModule mpm_event_module \(modules)/mod_mpm_event.so
            LoadModule authz_core_module \(modules)/mod_authz_core.so
            LoadModule authn_core_module \(modules)/mod_authn_core.so
            LoadModule authn_file_module \(modules)/mod_authn_file.so
            LoadModule authz_user_module \(modules)/mod_authz_user.so
            LoadModule auth_basic_module \(modules)/mod_auth_basic.so
            LoadModule alias_module \(modules)/mod_alias.so
            LoadModule dav_module \(modules)/mod_dav.so
            LoadModule dav_fs_module \(modules)/mod_dav_fs.so
            User www-data
            Group www-data
            DavLockDB "\(root.path)/lock/DavLock"
            Alias /dav "\(files.path)"
            <Directory "\(files.path)">
                Dav On
                AuthType Basic
                AuthName "dav"
                AuthUserFile "\(root.path)/htpasswd"
                Require valid-user
            </Directory>
            """
        try Data(configuration.utf8).write(to: root.appendingPathComponent("httpd.conf"))
        let password = UUID().uuidString
        try ServerProcess.runCommand(
            URL(fileURLWithPath: "/usr/bin/htpasswd"),
            ["-b", "-c", root.appendingPathComponent("htpasswd").path, "bench", password])
        try ServerProcess.runCommand(
            URL(fileURLWithPath: "/bin/chown"), ["-R", "www-data:www-data", files.path, root.appendingPathComponent("lock").path])
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/apache2")
        process.arguments = ["-f", root.appendingPathComponent("httpd.conf").path, "-DFOREGROUND"]
        try process.run()
        let apache = ApacheDAV(
            root: root,
            endpoint: WebDAVComparison.Endpoint(base: "http://127.0.0.1:\(port)/dav/", user: "bench", password: password),
            process: process)
        let deadline = ContinuousClock.now + .seconds(20)
        while (try? String(contentsOf: root.appendingPathComponent("run/httpd.pid"), encoding: .utf8)) == nil {
            guard ContinuousClock.now < deadline else {
                throw BenchmarkError("apache2 did not start: see \(root.path)/error.log")
            }
            usleep(50_000)
        }
        return apache
    }

    /// Ends httpd and its workers with SIGKILL: started from this process it inherits a signal mask that
    /// blocks SIGTERM (seen: `terminate()` and `apache2 -k stop` left it running), and nothing of it is kept.
    func stop() {
        try? ServerProcess.runCommand(URL(fileURLWithPath: "/usr/bin/pkill"), ["-KILL", "-f", root.path])
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: root)
    }
}
