"""Price computation: discounts and taxes."""

TAX_RATE = 0.2


def apply_discount(amount, percent):
    """Reduce an amount by a percentage discount."""
    if percent < 0 or percent > 100:
        raise ValueError("discount out of range")
    return amount * (100 - percent) / 100


def sales_tax(amount, rate=TAX_RATE):
    """Compute the sales tax owed on an amount."""
    return round(amount * rate, 2)


def compute_total(items, discount=0):
    """Sum the line items, apply the discount, then add sales tax."""
    subtotal = sum(item.price * item.quantity for item in items)
    discounted = apply_discount(subtotal, discount)
    return discounted + sales_tax(discounted)
