"""Card payments through the payment gateway."""

from .cart import Cart


class PaymentError(Exception):
    """A payment was declined or failed."""


class Gateway:
    """Talks to the card processor over HTTPS."""

    def __init__(self, api_key):
        self.api_key = api_key

    def post(self, path, payload):
        """Send a signed request to the processor."""
        raise NotImplementedError


def charge_card(gateway, cart: Cart, card_token):
    """Charge the customer's card for everything in the cart."""
    amount = cart.total()
    if amount <= 0:
        raise PaymentError("nothing to charge")
    response = gateway.post("/charges", {"amount": amount, "card": card_token})
    if response.get("status") != "succeeded":
        raise PaymentError(response.get("error", "declined"))
    return response["id"]


def refund(gateway, charge_id, amount=None):
    """Give money back to the customer for an earlier charge."""
    payload = {"charge": charge_id}
    if amount is not None:
        payload["amount"] = amount
    return gateway.post("/refunds", payload)
