/// The shares a record is in, as its entry's audience keeps it (through its tombstone too): the share
/// covering it now, if any, then the shares it has left. A participant of a share the record left sees
/// it as deleted; anyone else never learns of it.
struct ShareMembership: Sendable, Equatable {
    var current: String?
    var former: [String]

    init(current: String?, former: [String] = []) {
        self.current = current
        self.former = former
    }

    /// Parses an audience: lines, the first the current share (empty for none). Record names hold no
    /// control characters, so a newline cannot occur in a share's name.
    init(audience: String?) {
        guard let audience else {
            self.init(current: nil)
            return
        }
        let lines = audience.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        self.init(current: lines[0].isEmpty ? nil : lines[0], former: Array(lines.dropFirst()))
    }

    var audience: String? {
        guard current != nil || !former.isEmpty else { return nil }
        return ([current ?? ""] + former).joined(separator: "\n")
    }

    var all: [String] { (current.map { [$0] } ?? []) + former }

    /// The membership once the record falls under `share`: the share it leaves joins those it left.
    func moved(to share: String?) -> ShareMembership {
        guard share != current else { return self }
        var former = self.former.filter { $0 != share }
        if let current, !former.contains(current) { former.append(current) }
        return ShareMembership(current: share, former: former)
    }
}
