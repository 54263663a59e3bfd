import NimbusTestingCore
import Testing

@testable import NimbusDevice

/// The compact table every round's trees and scanned files are held in: it must answer exactly as a dictionary
/// would, whatever order items come and go in.
@Suite struct ItemTableTests {
    @Test func removingAnItemKeepsEveryOtherOneFound() {
        var table = ItemTable<String>()
        for name in ["a", "b", "c", "d"] { table[ItemID(name)] = name.uppercased() }
        table[ItemID("b")] = nil  // the last item moves into its place
        table[ItemID("x")] = nil  // absent: nothing changes
        #expect(table.count == 3)
        #expect(table[ItemID("b")] == nil)
        #expect(["a", "c", "d"].allSatisfy { table[ItemID($0)] == $0.uppercased() })
        table[ItemID("d")] = "D2"
        table[ItemID("d")] = nil  // now the last one itself
        table[ItemID("b")] = "B again"
        #expect(Set(table.keys) == [ItemID("a"), ItemID("c"), ItemID("b")])
        #expect(
            Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.value) })
                == [ItemID("a"): "A", ItemID("c"): "C", ItemID("b"): "B again"])
    }

    /// A mapped table shares the keys and slots of the one it was made from: each must still change on its own.
    @Test func aMappedTableAnswersForTheSameItemsAndChangesApart() {
        func id(_ index: Int) -> ItemID { ItemID("item-\(index)") }
        var table = ItemTable<Int>()
        for index in 0..<1_000 { table[id(index)] = index }
        var mapped = table.mapValues { "\($0)" }
        #expect(mapped.count == 1_000 && (0..<1_000).allSatisfy { mapped[id($0)] == "\($0)" })
        for index in stride(from: 0, to: 1_000, by: 3) { mapped[id(index)] = nil }
        mapped[id(5_000)] = "new"
        table[id(1)] = nil
        #expect((0..<1_000).allSatisfy { mapped[id($0)] == ($0 % 3 == 0 ? nil : "\($0)") })
        #expect(mapped[id(5_000)] == "new" && table[id(5_000)] == nil)
        #expect(table.count == 999 && (0..<1_000).allSatisfy { table[id($0)] == ($0 == 1 ? nil : $0) })
    }

    @Test func tablesWithTheSameItemsAreEqualWhateverTheOrder() {
        let forwards = ItemTable([ItemID("a"): 1, ItemID("b"): 2])
        var backwards = ItemTable<Int>()
        backwards[ItemID("b")] = 2
        backwards[ItemID("a")] = 1
        #expect(forwards == backwards)
        backwards[ItemID("a")] = 3
        #expect(forwards != backwards)
        backwards[ItemID("a")] = nil
        #expect(forwards != backwards)
    }

    /// Thousands of random writes and removals, each followed by a comparison with a dictionary given the same:
    /// among few IDs (the table small, most writes replacing or removing) and among many (the table growing
    /// while removals shift the slots after them back).
    @Test(arguments: [(1, 200), (2, 200), (3, 200), (4, 20_000), (5, 20_000)] as [(UInt64, Int)])
    func answersAsADictionaryWould(seed: UInt64, ids: Int) {
        var random = SeededGenerator(seed: seed)
        var table = ItemTable<Int>()
        var model: [ItemID: Int] = [:]
        for step in 0..<(ids * 5 / 2 + 5_000) {
            let id = ItemID("item-\(Int.random(in: 0..<ids, using: &random))")
            let value = Bool.random(using: &random) ? step : nil
            table[id] = value
            model[id] = value
            #expect(table.count == model.count && table[id] == model[id])
        }
        #expect(Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.value) }) == model)
        #expect(table.keys.count == Set(table.keys).count)
        #expect(zip(table.keys, table.values).allSatisfy { model[$0] == $1 })
        #expect(model.allSatisfy { table[$0] == $1 })
    }

    @Test func aTableSizedBeforeItFillsHoldsEveryItem() {
        let count = 100_101
        func id(_ index: Int) -> ItemID { ItemID("item-\(index)") }
        var table = ItemTable<Int>()
        table.reserveCapacity(count)
        for index in 0..<count { table[id(index)] = index }
        #expect(table.count == count)
        #expect((0..<count).allSatisfy { table[id($0)] == $0 })
        #expect(table[id(count)] == nil)
        for index in stride(from: 0, to: count, by: 2) { table[id(index)] = nil }
        #expect(table.count == count / 2)
        #expect((0..<count).allSatisfy { table[id($0)] == ($0 % 2 == 1 ? $0 : nil) })
    }
}
