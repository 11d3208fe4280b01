package a.b;
import java.util.List;
/** Doc. */
public class A extends B implements C {
  private int n;
  enum E { X, Y; void m() {} }
  int get() { if (n > 0) { return n; } else { throw new X(); } }
}
