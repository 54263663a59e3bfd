import NimbusTestingCore
import Testing

@testable import NimbusDevice

/// The planner finds which item holds a place through `PlaceIndex`: it must answer as a dictionary filled in the
/// tree's order would, where the first item at a place keeps it.
@Suite struct PlaceIndexTests {
    /// Random trees where many items share a place (few parents and names), and places nobody holds.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func answersAsTheFirstItemAtEachPlace(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let parents: [ItemID?] = [nil] + (0..<5).map { ItemID("folder-\($0)") }
        func place() -> Place {
            Place(parent: parents.randomElement(using: &random)!, name: "name-\(Int.random(in: 0..<40, using: &random))")
        }
        var tree = SyncTree()
        for index in 0..<(Int.random(in: 0..<600, using: &random)) {
            tree[ItemID("item-\(index)")] = SyncItem(place: place(), kind: .file, content: nil)
        }
        // A few removed, so that the tree's order is not the order items were added in.
        for index in 0..<40 { tree[ItemID("item-\(index * 7)")] = nil }
        var model: [Place: ItemID] = [:]
        for (id, item) in tree.items where model[item.place] == nil { model[item.place] = id }
        let index = tree.placeIndex()
        for parent in parents {
            for name in 0..<45 {
                let place = Place(parent: parent, name: "name-\(name)")
                #expect(index[place] == model[place], "\(place)")
            }
        }
    }
}
