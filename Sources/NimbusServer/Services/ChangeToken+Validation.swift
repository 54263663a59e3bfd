import NimbusCore
import NimbusStore

extension ChangeToken {
    /// The token, when it names this zone (or the time before it existed) at a sequence the zone reached;
    /// otherwise `CHANGE_TOKEN_EXPIRED`, so the client starts over without a token.
    func validated(against state: ZoneState?) throws(NimbusError) -> ChangeToken {
        let valid =
            zoneID == 0
            ? sequence == 0
            : (zoneID == state?.id && state!.history.holds(sequence, epoch: epoch, current: state!.sequence))
        guard valid else {
            throw NimbusError(
                .changeTokenExpired, "syncToken does not belong to this zone's history; fetch again without a token")
        }
        return self
    }
}

extension ZoneStore {
    /// A page of the zone's changes after a client's token (nil: from the start): at most `resultsLimit`
    /// entries, which must lie in 1…`maxPerPage` (the default when nil).
    func changes(_ zone: ZoneKey, since token: String?, resultsLimit: Int?, maxPerPage: Int) async throws -> ChangePage {
        let limit = resultsLimit ?? maxPerPage
        guard (1...maxPerPage).contains(limit) else {
            throw NimbusError.badRequest("resultsLimit must be between 1 and \(maxPerPage)")
        }
        var since: Int64 = 0
        if let token { since = try ChangeToken(encoded: token).validated(against: try await zoneState(zone)).sequence }
        return try await changes(zone, after: since, limit: limit)
    }
}
