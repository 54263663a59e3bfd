import NimbusDevice
import Testing

/// Which wakes run a round: any but a push, and a push of changes the journal has not fetched yet.
@Suite struct DaemonWakesTests {
    @Test func aPushOfChangesFetchedAlreadyRunsNoRound() {
        let wakes = DaemonWakes()
        // The device's own commit, pushed back to it while the round that made it went on to fetch it.
        wakes.pushed(7)
        #expect(!wakes.askForRound(fetched: 7))
        wakes.pushed(5)
        wakes.pushed(8)
        #expect(wakes.askForRound(fetched: 7), "another device's change beyond what was fetched")
        wakes.pushed(3)
        #expect(wakes.askForRound(fetched: nil), "a journal that cannot tell takes every push as news")
    }

    /// A change while a round runs (a file written while it uploads) is seen by the next round of the same
    /// sync, which begins after it: no round after the sync for it. One after that round began still asks.
    @Test func aRoundThatBeginsAfterAWakeServesIt() {
        let wakes = DaemonWakes()
        wakes.wake()
        wakes.pushed(12)
        wakes.roundBegins()
        #expect(!wakes.askForRound(fetched: 10))
        wakes.roundBegins()
        wakes.wake()
        #expect(wakes.askForRound(fetched: 10))
    }

    @Test func everyOtherWakeRunsARoundAndEachIsUsedOnce() {
        let wakes = DaemonWakes()
        wakes.pushed(2)
        wakes.wake()
        #expect(wakes.askForRound(fetched: 10), "a folder change beside a push fetched already")
        #expect(!wakes.askForRound(fetched: 10), "its reasons were used by the look before")
        wakes.wake()
        #expect(wakes.askForRound(fetched: nil))
    }
}
