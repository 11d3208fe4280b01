#include <string>
#include "shape.hpp"

namespace geo {

/// A circle.
class Circle : public Shape, private Named {
public:
    explicit Circle(double r);
    /// Its area.
    double area() const override;
private:
    double r_;
};

template <typename T>
T twice(T x) { return x + x; }

double Circle::area() const {
    if (r_ < 0) {
        throw std::domain_error("negative");
    }
    return helper::pi() * r_ * r_;
}

}  // namespace geo
