import AsyncHTTPClient
import BenchmarkSupport
import Foundation
import NIOCore
import NimbusCore
import NimbusKit

/// The dashboard's pages with 1,000,000 records in a type: time to first byte of each main page beside
/// `/health`'s in the same rounds, and the records page's 10,000th page beside its first.
extension RecordBenchmarks {
    static func dashboardRows(
        _ server: ServerProcess, _ database: CloudDatabase, session: NimbusSession, into table: inout ResultTable
    )
        async throws
    {
        let cookie = try await dashboardCookie(server)
        let zone = try await database.save(RecordZone(zoneName: "Dashboard")).zoneID
        progress("seeding 1,000,000 records for the dashboard")
        try await seed(database, zone: zone, range: 0..<1_000_000)
        let records =
            "/dashboard/containers/\(server.container)/records?env=development&db=private&user=\(session.userRecordName)"
            + "&zone=Dashboard&type=Items"
        progress("following the records page's next links to its 10,000th page")
        let tenThousandth = try await nextLink(from: records, times: 10_000 - 1, server: server, cookie: cookie)
        let sorted = records + "&sort=number&order=descending"
        progress("following the sorted records page's next links to its 1,000th page")
        let sortedDeep = try await nextLink(from: sorted, times: 1_000 - 1, server: server, cookie: cookie)
        let pages: [(String, String)] = [
            ("/health", "/health"),
            ("overview", "/dashboard"),
            ("schema", "/dashboard/containers/\(server.container)/schema"),
            ("records, first page", records),
            ("records, 10,000th page", tenThousandth),
            (
                "one record",
                "/dashboard/containers/\(server.container)/records/item-500000?env=development&db=private"
                    + "&user=\(session.userRecordName)&zone=Dashboard"
            ),
            ("users", "/dashboard/users"),
            ("a user's devices", "/dashboard/users/\(session.userRecordName)"),
            ("documents", "/dashboard/documents"),
            ("tokens", "/dashboard/tokens"),
            ("activity", "/dashboard/activity"),
            ("records sorted by number (descending), first page", sorted),
            ("records sorted by number (descending), 1,000th page", sortedDeep),
        ]
        progress("measuring time to first byte of each page, taking turns")
        var samples = [[Double]](repeating: [], count: pages.count)
        for round in 0..<(warmUpRounds + measuredRounds) {
            for (index, (_, path)) in pages.enumerated() {
                let milliseconds = try await timeToFirstByte(server.url.absoluteString + path, cookie: cookie)
                if round >= warmUpRounds { samples[index].append(milliseconds) }
            }
        }
        for (index, (name, _)) in pages.enumerated() {
            let latencies = Percentiles(samples[index])
            let isHealth = index == 0
            table.add(
                isHealth
                    ? "Baseline: GET /health, time to first byte (same rounds, \(measuredRounds) each)"
                    : "Dashboard \(name), time to first byte",
                String(format: "p99 %.1f ms (p50 %.1f)", latencies.at(99), latencies.at(50)),
                target: isHealth ? "(reference)" : "p99 ≤ 50 ms", met: isHealth || latencies.at(99) <= 50)
        }
        let first = Percentiles(samples[3]).at(50)
        let deep = Percentiles(samples[4]).at(50)
        table.add(
            "Records page 10,000 / page 1 (p50)", String(format: "%.1f×", deep / first), target: "≤ 1.2× (as fast)",
            met: deep / first <= 1.2)
    }

    static let warmUpRounds = 5
    static let measuredRounds = 35

    /// A client that shows the sign-in's own answer (its cookie) rather than following it to the next page.
    static let noRedirects = HTTPClient(
        eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))

    /// Signs the bench's administrator in to the dashboard; its session cookie.
    static func dashboardCookie(_ server: ServerProcess) async throws -> String {
        var request = HTTPClientRequest(url: server.url.absoluteString + "/dashboard/signin")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let password = ServerProcess.password.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        request.body = .bytes(ByteBuffer(string: "email=admin%40bench.local&password=\(password)"))
        let response = try await noRedirects.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard let cookie = response.headers["set-cookie"].first(where: { $0.hasPrefix("nimbus_dashboard=") }) else {
            throw NimbusError(
                .authenticationFailed,
                "the dashboard did not sign the benchmark's administrator in: \(response.status) \(String(buffer: body).prefix(500))"
            )
        }
        return String(cookie.split(separator: ";")[0])
    }

    /// The path `times` pages on from a records page, by its "Next page" links, as a person would get there.
    static func nextLink(from path: String, times: Int, server: ServerProcess, cookie: String) async throws -> String {
        var path = path
        for _ in 0..<times {
            var request = HTTPClientRequest(url: server.url.absoluteString + path)
            request.headers.add(name: "Cookie", value: cookie)
            let response = try await noRedirects.execute(request, timeout: .seconds(30))
            let page = String(buffer: try await response.body.collect(upTo: 16 << 20))
            guard let link = page.firstMatch(of: /<a href="([^"]+)" id="next-page"/) else {
                throw NimbusError(.internalError, "\(path) answered \(response.status) without a next page")
            }
            path = String(link.1).replacingOccurrences(of: "&amp;", with: "&")
        }
        return path
    }

    /// Milliseconds until the answer's head arrives; the page itself must answer 200 (not a redirect to sign in).
    static func timeToFirstByte(_ url: String, cookie: String) async throws -> Double {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Cookie", value: cookie)
        let start = ContinuousClock.now
        let response = try await noRedirects.execute(request, timeout: .seconds(30))
        let elapsed = (ContinuousClock.now - start).milliseconds
        let body = try await response.body.collect(upTo: 16 << 20)
        guard response.status == .ok else {
            throw NimbusError(.internalError, "\(url) answered \(response.status): \(String(buffer: body).prefix(300))")
        }
        return elapsed
    }
}
