const f = (x) => { if (x) { return g(x); } };
function h(a, b) {
  /** doc */
  class K { m() { return 1; } }
}
module.exports = { f, h };
