import Testing

@testable import NimbusServer

/// What a request's lookups remember: a value found is reused for its lifetime and forgotten on demand; one
/// not found is looked up again (a container or account made a moment later is seen at once) unless misses
/// are kept, as for credentials.
struct ExpiringCacheTests {
    actor Lookups {
        var count = 0
        var answer: String?
        func set(_ answer: String?) { self.answer = answer }
        func load() -> String? {
            count += 1
            return answer
        }
    }

    @Test func foundValuesAreReusedUntilForgotten() async throws {
        let cache = ExpiringCache<String, String>(lifetime: .seconds(3600), keepsMisses: false)
        let lookups = Lookups()
        #expect(try await cache.value(for: "ann") { await lookups.load() } == nil)
        await lookups.set("ann@example.com")
        #expect(try await cache.value(for: "ann") { await lookups.load() } == "ann@example.com", "a miss is not kept")
        await lookups.set("changed@example.com")
        #expect(try await cache.value(for: "ann") { await lookups.load() } == "ann@example.com", "a hit is kept")
        #expect(await lookups.count == 2)
        cache.invalidateAll()
        #expect(try await cache.value(for: "ann") { await lookups.load() } == "changed@example.com")
        #expect(await lookups.count == 3)
    }

    @Test func missesAreKeptWhenAskedAndNothingOutlivesItsLifetime() async throws {
        let keeping = ExpiringCache<String, String>(lifetime: .seconds(3600), keepsMisses: true)
        let lookups = Lookups()
        #expect(try await keeping.value(for: "ann") { await lookups.load() } == nil)
        await lookups.set("ann@example.com")
        #expect(try await keeping.value(for: "ann") { await lookups.load() } == nil)
        #expect(await lookups.count == 1)

        let momentary = ExpiringCache<String, String>(lifetime: .zero, keepsMisses: true)
        #expect(try await momentary.value(for: "ann") { await lookups.load() } == "ann@example.com")
        await lookups.set("changed@example.com")
        #expect(try await momentary.value(for: "ann") { await lookups.load() } == "changed@example.com")
        #expect(await lookups.count == 3)
    }
}
