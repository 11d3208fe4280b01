"""The shopping cart."""

from .pricing import compute_total


class LineItem:
    """One product in the cart with its quantity."""

    def __init__(self, sku, price, quantity=1):
        self.sku = sku
        self.price = price
        self.quantity = quantity


class Cart:
    """A customer's shopping cart."""

    def __init__(self):
        self.items = []

    def add(self, sku, price, quantity=1):
        """Put a product into the cart."""
        for item in self.items:
            if item.sku == sku:
                item.quantity += quantity
                return item
        item = LineItem(sku, price, quantity)
        self.items.append(item)
        return item

    def remove(self, sku):
        """Take a product out of the cart."""
        self.items = [i for i in self.items if i.sku != sku]

    def total(self, discount=0):
        """The amount the customer pays."""
        return compute_total(self.items, discount)
