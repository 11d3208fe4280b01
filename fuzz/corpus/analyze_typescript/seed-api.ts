/** A product as the storefront shows it. */
export interface Product {
  sku: string;
  title: string;
  priceCents: number;
}

/** Fetches the product catalogue from the shop backend. */
export async function fetchCatalogue(baseUrl: string): Promise<Product[]> {
  const response = await fetch(`${baseUrl}/products`);
  if (!response.ok) {
    throw new Error(`catalogue request failed: ${response.status}`);
  }
  return response.json();
}

/** Formats a price in cents as a currency string. */
export function formatPrice(priceCents: number, currency = "EUR"): string {
  return new Intl.NumberFormat("en", { style: "currency", currency }).format(priceCents / 100);
}
