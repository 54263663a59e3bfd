import Foundation
import Hummingbird
import NimbusCore
import NimbusStore
import ServiceLifecycle

/// Usage and activity, for administrators: storage per user and container against the quota; this
/// node's requests, failures and latency over the last hour as charts the server draws; its latest
/// changes and errors, live over server-sent events.
struct ActivityPages {
    let server: ServerState
    static let usageRows = 200

    func register(on router: RouterGroup<DashboardRequestContext>, viewer: @escaping DashboardViewerLoader) {
        router.get("activity") { _, context in
            let viewer = try await viewer(context)
            try viewer.requireAdministrator()
            return DashboardRenderer.shared.page("activity", try await page(viewer))
        }
        router.get("activity/events") { _, context in
            try await viewer(context).requireAdministrator()
            let events = server.activity.events()
            var headers = DashboardRenderer.securityHeaders
            headers[.contentType] = "text/event-stream"
            headers[.cacheControl] = "no-store"
            return Response(
                status: .ok, headers: headers,
                body: ResponseBody { writer in
                    // A comment first, so the browser knows the stream is open before anything happens.
                    try await writer.write(ByteBuffer(string: ": connected\n\n"))
                    let encoder = JSONEncoder()
                    encoder.dateEncodingStrategy = .iso8601
                    // The stream never ends on its own: a graceful shutdown, which waits for open requests, ends it.
                    for await event in events.cancelOnGracefulShutdown() {
                        let json = String(decoding: try encoder.encode(event), as: UTF8.self)
                        try await writer.write(ByteBuffer(string: "data: \(json)\n\n"))
                    }
                    try await writer.finish(nil)
                })
        }
    }

    private func page(_ viewer: DashboardViewer) async throws -> ActivityPageModel {
        let quota = Int(server.configuration.userQuotaBytes)
        var emails = [String: String]()
        for account in try await server.store.accounts() { emails[account.id] = account.email }
        let usage = try await server.store.storageUsage(limit: Self.usageRows)
        var totals = [String: Int]()
        for row in usage { totals[row.accountID, default: 0] += row.bytes }
        let owner = { (id: String) in
            id == RecordDatabase.publicOwner ? "public databases" : emails[id] ?? id
        }
        let minutes = server.activity.minutes()
        let formatter = ISO8601DateFormatter()
        return ActivityPageModel(
            chrome: DashboardChrome(title: "Usage and activity", viewer: viewer, section: "activity"),
            accounts: totals.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { id, bytes in
                ActivityPageModel.AccountRow(
                    owner: owner(id), bytes: DocumentPages.bytes(Int64(bytes)),
                    share: id == RecordDatabase.publicOwner
                        ? "" : "\(Int((Double(bytes) / Double(quota) * 100).rounded()))% of \(DocumentPages.bytes(Int64(quota)))",
                    overQuota: id != RecordDatabase.publicOwner && bytes > quota)
            },
            usage: usage.map {
                ActivityPageModel.UsageRow(
                    owner: owner($0.accountID), container: $0.container ?? "key-value stores",
                    bytes: DocumentPages.bytes(Int64($0.bytes)),
                    zones: $0.zones)
            },
            requestsChart: SVGChart(
                title: "Requests a minute", unit: "requests",
                series: [
                    .init(name: "requests", values: minutes.map { Double($0.requests) }, style: 0),
                    .init(name: "failures", values: minutes.map { Double($0.failures) }, style: 1),
                ]
            ).svg,
            latencyChart: SVGChart(
                title: "Latency", unit: "milliseconds",
                series: [
                    .init(name: "p50", values: minutes.map { $0.latency(percentile: 0.5).map { min($0, 10_000) } }, style: 0),
                    .init(name: "p99", values: minutes.map { $0.latency(percentile: 0.99).map { min($0, 10_000) } }, style: 1),
                ]
            ).svg,
            requestsLastHour: minutes.reduce(0) { $0 + $1.requests }, failuresLastHour: minutes.reduce(0) { $0 + $1.failures },
            events: server.activity.recentEvents().map {
                ActivityPageModel.EventRow(
                    time: formatter.string(from: $0.time), kind: $0.kind.rawValue, method: $0.method, route: $0.route,
                    status: $0.status)
            })
    }
}

struct ActivityPageModel: DashboardPageModel {
    var chrome: DashboardChrome
    var accounts: [AccountRow]
    var usage: [UsageRow]
    var requestsChart: String
    var latencyChart: String
    var requestsLastHour: Int
    var failuresLastHour: Int
    var events: [EventRow]

    struct AccountRow: Sendable {
        var owner: String
        var bytes: String
        var share: String
        var overQuota: Bool
    }

    struct UsageRow: Sendable {
        var owner: String
        var container: String
        var bytes: String
        var zones: Int
    }

    struct EventRow: Sendable {
        var time: String
        var kind: String
        var method: String
        var route: String
        var status: Int
    }
}
