import { Product, formatPrice } from "./api";

/** The storefront's basket widget state. */
export class Basket {
  private lines: Map<string, number> = new Map();

  /** Adds one unit of a product. */
  addProduct(product: Product): void {
    this.lines.set(product.sku, (this.lines.get(product.sku) ?? 0) + 1);
  }

  /** Renders the basket total for display. */
  renderTotal(products: Product[]): string {
    let cents = 0;
    for (const p of products) {
      cents += (this.lines.get(p.sku) ?? 0) * p.priceCents;
    }
    return formatPrice(cents);
  }
}
