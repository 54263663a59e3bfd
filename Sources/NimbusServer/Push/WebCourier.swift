import Foundation
import NimbusCore
import Synchronization

/// Subscription notifications for web clients, which keep no socket open: `tokens/create` hands a
/// browser a token and a web courier URL, `tokens/register` starts collecting the user's notifications
/// for it, and the browser long-polls the URL for them (CloudKit JS's `registerForNotifications`).
///
/// Mailboxes live in memory, as APNs tokens live with Apple: a restart forgets them and the client
/// registers again. Each holds the newest `capacity` notifications while no poll waits, and is dropped
/// once unpolled for `idleLifetime`; a client catches up from its change tokens, as after any push.
final class WebCourier: Sendable {
    static let capacity = 100
    static let maxTokensPerAccount = 16
    static let idleLifetime: TimeInterval = 10 * 60

    private struct Mailbox {
        var accountID: String
        var container: String
        var environment: String
        var registered = false
        var notifications = [RecordNotification]()
        var waiter: (poll: UUID, continuation: CheckedContinuation<RecordNotification?, Never>)?
        var lastActive: Date
    }

    private let mailboxes = Mutex<[String: Mailbox]>([:])

    /// A new token for the account's notifications in one container environment.
    func create(accountID: String, container: String, environment: String, now: Date) -> String {
        let token = Secrets.apiToken()
        let dropped = mailboxes.withLock { mailboxes in
            var dropped = [CheckedContinuation<RecordNotification?, Never>]()
            for (token, mailbox) in mailboxes
            where now.timeIntervalSince(mailbox.lastActive) > Self.idleLifetime && mailbox.waiter == nil {
                mailboxes[token] = nil
            }
            let own = mailboxes.filter { $0.value.accountID == accountID }.sorted { $0.value.lastActive < $1.value.lastActive }
            for (oldest, mailbox) in own.prefix(max(0, own.count - Self.maxTokensPerAccount + 1)) {
                mailboxes[oldest] = nil
                if let waiter = mailbox.waiter { dropped.append(waiter.continuation) }
            }
            mailboxes[token] = Mailbox(accountID: accountID, container: container, environment: environment, lastActive: now)
            return dropped
        }
        for waiter in dropped { waiter.resume(returning: nil) }
        return token
    }

    /// Starts collecting notifications for a token the account created; false for any other token.
    func register(token: String, accountID: String, now: Date) -> Bool {
        mailboxes.withLock { mailboxes in
            guard mailboxes[token]?.accountID == accountID else { return false }
            mailboxes[token]?.registered = true
            mailboxes[token]?.lastActive = now
            return true
        }
    }

    func deliver(to accountID: String, _ notification: RecordNotification) {
        let waiters = mailboxes.withLock { mailboxes in
            var waiters = [(CheckedContinuation<RecordNotification?, Never>, RecordNotification)]()
            for (token, mailbox) in mailboxes
            where mailbox.registered && mailbox.accountID == accountID && mailbox.container == notification.containerIdentifier
                && mailbox.environment == notification.environment
            {
                if let waiter = mailbox.waiter {
                    mailboxes[token]?.waiter = nil
                    waiters.append((waiter.continuation, notification))
                } else {
                    mailboxes[token]?.notifications.append(notification)
                    if mailbox.notifications.count >= Self.capacity { mailboxes[token]?.notifications.removeFirst() }
                }
            }
            return waiters
        }
        for (waiter, notification) in waiters { waiter.resume(returning: notification) }
    }

    enum PollError: Error { case unknownToken, alreadyPolling }

    /// The oldest notification waiting for `token`, or the next to come within `timeout`; nil when none
    /// came (or the poll was cancelled).
    func poll(token: String, timeout: Duration, now: Date) async throws(PollError) -> RecordNotification? {
        let ready: Result<RecordNotification?, PollError> = mailboxes.withLock { mailboxes in
            guard var mailbox = mailboxes[token] else { return .failure(.unknownToken) }
            guard mailbox.waiter == nil else { return .failure(.alreadyPolling) }
            mailbox.lastActive = now
            defer { mailboxes[token] = mailbox }
            return .success(mailbox.notifications.isEmpty ? nil : mailbox.notifications.removeFirst())
        }
        if let notification = try ready.get() { return notification }
        let poll = UUID()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let waiting = mailboxes.withLock { mailboxes in
                    guard !Task.isCancelled, mailboxes[token] != nil, mailboxes[token]?.waiter == nil else { return false }
                    if let next = mailboxes[token]?.notifications.first {
                        mailboxes[token]?.notifications.removeFirst()
                        continuation.resume(returning: next)
                        return true
                    }
                    mailboxes[token]?.waiter = (poll, continuation)
                    return true
                }
                guard waiting else { return continuation.resume(returning: nil) }
                // Started once the waiter is in place, so it cannot fire before there is one to end.
                Task {
                    try? await Task.sleep(for: timeout)
                    self.resumeWaiter(token, poll: poll)
                }
            }
        } onCancel: {
            resumeWaiter(token, poll: poll)
        }
    }

    /// Ends a waiting poll empty-handed, if it is still the one waiting.
    private func resumeWaiter(_ token: String, poll: UUID) {
        let waiter = mailboxes.withLock { mailboxes -> CheckedContinuation<RecordNotification?, Never>? in
            guard let waiter = mailboxes[token]?.waiter, waiter.poll == poll else { return nil }
            mailboxes[token]?.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(returning: nil)
    }
}
