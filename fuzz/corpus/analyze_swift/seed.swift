import Foundation
import Store

/// A cart.
class Cart: Base, Codable {
    var items: [Item] = []

    /// Adds an item.
    func add(_ item: Item) -> Bool {
        if item.price < 0 {
            return false
        }
        Store.save(item)
        return true
    }
}

extension Cart {
    func clear() { items.removeAll() }
}

protocol Closeable { func close() }
struct Point { var x: Int }
enum Color { case red, green }
