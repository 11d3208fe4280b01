require "json"
require_relative "store/base"

module Shop
  # A cart of items.
  class Cart < Base
    include Enumerable
    attr_reader :items
    LIMIT = 10

    # Adds an item.
    def add(item)
      if item.nil?
        raise ArgumentError, "nil"
      end
      items << item
      Store.save(item)
    end

    def self.empty
      new
    end
  end
end
