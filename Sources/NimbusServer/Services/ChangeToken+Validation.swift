import NimbusCore
import NimbusStore

extension ChangeToken {
    /// The token, when it names this zone (or the time before it existed) at a sequence the zone reached;
    /// otherwise `CHANGE_TOKEN_EXPIRED`, so the client starts over without a token.
    func validated(against state: ZoneState?) throws(NimbusError) -> ChangeToken {
        let valid = zoneID == 0 ? sequence == 0 : (zoneID == state?.id && sequence <= state!.sequence)
        guard valid else {
            throw NimbusError(
                .changeTokenExpired, "syncToken does not belong to this zone's history; fetch again without a token")
        }
        return self
    }
}
