package com.acme.shop

import com.acme.store.Repo

/** A cart. */
class Cart(private val repo: Repo) : Base(), Closeable {
    val items = mutableListOf<Item>()

    /** Adds an item. */
    fun add(item: Item): Boolean {
        if (item.price < 0) {
            throw IllegalArgumentException("price")
        }
        repo.save(item)
        return items.add(item)
    }
}

interface Closeable { fun close() }
enum class Color { RED, GREEN }
fun helper(x: Int) = x * 2
