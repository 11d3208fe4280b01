package com.acme.shop

import com.acme.store.Repo

/** A cart. */
class Cart(repo: Repo) extends Base with Closeable {
  val items = List.empty[Item]

  /** Adds an item. */
  def add(item: Item): Boolean = {
    if (item.price < 0) {
      throw new IllegalArgumentException("price")
    }
    repo.save(item)
    true
  }
}

trait Closeable { def close(): Unit }
object Cart { def empty: Cart = new Cart(null) }
