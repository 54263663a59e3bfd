import ServiceLifecycle

/// Runs `body` every `interval` (first after one interval) until the server shuts down gracefully; a
/// shutdown during the wait ends it at once, one during `body` after it.
func periodically(every interval: Duration, _ body: () async -> Void) async {
    while !Task.isShuttingDownGracefully {
        do {
            try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        } catch {
            return
        }
        await body()
    }
}
