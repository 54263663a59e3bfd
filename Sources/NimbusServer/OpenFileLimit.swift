#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The process's limit on open files, which bounds how many connections the server can hold.
package enum OpenFileLimit {
    /// Raises the soft limit (often 1,024) to the hard one (often a million), so that a few thousand slow
    /// clients cannot use up the server's sockets; returns the limit now in force, nil when unknown.
    @discardableResult
    package static func raiseToHardLimit() -> UInt64? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }
}
