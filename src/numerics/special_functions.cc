// The CHLO decompositions of StableHLO (stablehlo/transforms/ChloLegalizeToStablehlo.cpp,
// ChloDecompositionPatterns.td, ChloDecompositionPatternsMath.td) as scalar functions. Each function below follows
// its decomposition op by op: the same constants, the same operand order, the same selects. A value of the
// evaluation type is a Val<P>: a double that always holds a value of the type, rounded after every op by the
// policy P as the reference interpreter rounds (stablehlo/reference/Element.cpp):
//   + - * / : APFloat arithmetic in the type. Computing in double and rounding once to f32/f16/bf16 gives the same
//             bits (double has more than 2p+2 bits for these p, so the double rounding is innocuous);
//   exp log log1p expm1 sin cos atan2 sqrt pow : std:: function on the value converted to double, rounded once to
//             the type (mapWithUpcastToDouble);
//   floor abs neg sign min max clamp rem, comparisons, selects : exact.
// This file is compiled with -ffp-contract=off: a fused multiply-add would round once where the reference rounds
// twice.
#include "numerics/special_functions.h"

#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "numerics/float_formats.h"

namespace neuronmem::numerics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;  // M_PI

// Rounding policies: Round(d) is the value of the type nearest to d (ties to even).
struct F64 {
  static double Round(double d) { return d; }
  static constexpr double kMax = DBL_MAX;
  static constexpr double kSmallest = std::numeric_limits<double>::denorm_min();
};
struct F32 {
  static double Round(double d) { return static_cast<double>(static_cast<float>(d)); }
  static constexpr double kMax = FLT_MAX;
  static constexpr double kSmallest = std::numeric_limits<float>::denorm_min();
};
template <ElementType kType>
double RoundSmall(double d) {
  static const FloatFormat* const format = SmallFloatFormat(kType);
  return DecodeFloatToDouble(*format, EncodeFloat(*format, d));
}
struct F16 {
  static double Round(double d) { return RoundSmall<ElementType::kF16>(d); }
  static constexpr double kMax = 65504.0;
};
struct BF16 {
  static double Round(double d) { return RoundSmall<ElementType::kBF16>(d); }
  static constexpr double kMax = 0x1.FEp127;
};

template <class P>
struct Val {
  double v;
};

// getConstantLike: a double (or float, or integer) constant converted to the type.
template <class P>
Val<P> C(double d) {
  return {P::Round(d)};
}

template <class P>
Val<P> operator+(Val<P> a, Val<P> b) {
  return {P::Round(a.v + b.v)};
}
template <class P>
Val<P> operator-(Val<P> a, Val<P> b) {
  return {P::Round(a.v - b.v)};
}
template <class P>
Val<P> operator*(Val<P> a, Val<P> b) {
  return {P::Round(a.v * b.v)};
}
template <class P>
Val<P> operator/(Val<P> a, Val<P> b) {
  return {P::Round(a.v / b.v)};
}
template <class P>
Val<P> operator-(Val<P> a) {
  return {-a.v};
}
template <class P>
bool operator<(Val<P> a, Val<P> b) {
  return a.v < b.v;
}
template <class P>
bool operator<=(Val<P> a, Val<P> b) {
  return a.v <= b.v;
}
template <class P>
bool operator>(Val<P> a, Val<P> b) {
  return a.v > b.v;
}
template <class P>
bool operator>=(Val<P> a, Val<P> b) {
  return a.v >= b.v;
}
template <class P>
bool operator==(Val<P> a, Val<P> b) {
  return a.v == b.v;
}
template <class P>
bool operator!=(Val<P> a, Val<P> b) {
  return !(a.v == b.v);
}

template <class P>
Val<P> Sel(bool c, Val<P> a, Val<P> b) {
  return c ? a : b;
}
template <class P>
Val<P> Exp(Val<P> a) {
  return {P::Round(std::exp(a.v))};
}
template <class P>
Val<P> Expm1(Val<P> a) {
  return {P::Round(std::expm1(a.v))};
}
template <class P>
Val<P> Log(Val<P> a) {
  return {P::Round(std::log(a.v))};
}
template <class P>
Val<P> Log1p(Val<P> a) {
  return {P::Round(std::log1p(a.v))};
}
template <class P>
Val<P> Sqrt(Val<P> a) {
  return {P::Round(std::sqrt(a.v))};
}
template <class P>
Val<P> Sin(Val<P> a) {
  return {P::Round(std::sin(a.v))};
}
template <class P>
Val<P> Cos(Val<P> a) {
  return {P::Round(std::cos(a.v))};
}
template <class P>
Val<P> Atan2(Val<P> y, Val<P> x) {
  return {P::Round(std::atan2(y.v, x.v))};
}
template <class P>
Val<P> Pow(Val<P> a, Val<P> b) {
  return {P::Round(std::pow(a.v, b.v))};
}
template <class P>
Val<P> Floor(Val<P> a) {
  return {std::floor(a.v)};
}
template <class P>
Val<P> Abs(Val<P> a) {
  return {std::fabs(a.v)};
}
template <class P>
Val<P> Rem(Val<P> a, Val<P> b) {
  return {std::fmod(a.v, b.v)};
}
template <class P>
bool IsFinite(Val<P> a) {
  return std::isfinite(a.v);
}
// stablehlo.sign: -1, -0, +0, 1 or NaN.
template <class P>
Val<P> Sign(Val<P> a) {
  if (std::isnan(a.v) || a.v == 0) return a;
  return {a.v < 0 ? -1.0 : 1.0};
}
// llvm::maximum / llvm::minimum: NaN wins, and -0 < +0.
template <class P>
Val<P> Max(Val<P> a, Val<P> b) {
  if (std::isnan(a.v)) return a;
  if (std::isnan(b.v)) return b;
  if (a.v == 0 && b.v == 0) return std::signbit(a.v) ? b : a;
  return a.v < b.v ? b : a;
}
template <class P>
Val<P> Min(Val<P> a, Val<P> b) {
  if (std::isnan(a.v)) return a;
  if (std::isnan(b.v)) return b;
  if (a.v == 0 && b.v == 0) return std::signbit(a.v) ? a : b;
  return a.v < b.v ? a : b;
}
// stablehlo.clamp(lo, x, hi) = min(max(x, lo), hi).
template <class P>
Val<P> Clamp(Val<P> lo, Val<P> x, Val<P> hi) {
  return Min(Max(x, lo), hi);
}

// materializePolynomialApproximation: Horner from the first coefficient.
template <class P, class T, size_t N>
Val<P> Polynomial(Val<P> x, const std::array<T, N>& c) {
  Val<P> poly = C<P>(c[0]);
  for (size_t i = 1; i < N; ++i) {
    poly = poly * x;
    poly = poly + C<P>(c[i]);
  }
  return poly;
}

// materializeChebyshevPolynomialApproximation.
template <class P, class T, size_t N>
Val<P> Chebyshev(Val<P> x, const std::array<T, N>& coefficients) {
  Val<P> b0 = C<P>(0), b1 = C<P>(0), b2 = C<P>(0);
  for (T c : coefficients) {
    b2 = b1;
    b1 = b0;
    b0 = x * b1;
    b0 = b0 - b2;
    b0 = b0 + C<P>(c);
  }
  return (b0 - b2) * C<P>(0.5);
}

// ---- bessel_i1e (materializeBesselI1eApproximation, Cephes coefficients) ----

constexpr std::array<float, 17> kI1eCoeffsAF32 = {
    9.38153738649577178388E-9f, -4.44505912879632808065E-8f, 2.00329475355213526229E-7f, -8.56872026469545474066E-7f,
    3.47025130813767847674E-6f, -1.32731636560394358279E-5f, 4.78156510755005422638E-5f, -1.61760815825896745588E-4f,
    5.12285956168575772895E-4f, -1.51357245063125314899E-3f, 4.15642294431288815669E-3f, -1.05640848946261981558E-2f,
    2.47264490306265168283E-2f, -5.29459812080949914269E-2f, 1.02643658689847095384E-1f, -1.76416518357834055153E-1f,
    2.52587186443633654823E-1f};
constexpr std::array<float, 7> kI1eCoeffsBF32 = {
    -3.83538038596423702205E-9f, -2.63146884688951950684E-8f, -2.51223623787020892529E-7f, -3.88256480887769039346E-6f,
    -1.10588938762623716291E-4f, -9.76109749136146840777E-3f, 7.78576235018280120474E-1f};
constexpr std::array<double, 29> kI1eCoeffsAF64 = {
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16, -1.10559694773538630805E-15,
    7.60068429473540693410E-15, -5.04218550472791168711E-14, 3.22379336594557470981E-13, -1.98397439776494371520E-12,
    1.17361862988909016308E-11, -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9,  -4.44505912879632808065E-8,  2.00329475355213526229E-7,  -8.56872026469545474066E-7,
    3.47025130813767847674E-6,  -1.32731636560394358279E-5,  4.78156510755005422638E-5,  -1.61760815825896745588E-4,
    5.12285956168575772895E-4,  -1.51357245063125314899E-3,  4.15642294431288815669E-3,  -1.05640848946261981558E-2,
    2.47264490306265168283E-2,  -5.29459812080949914269E-2,  1.02643658689847095384E-1,  -1.76416518357834055153E-1,
    2.52587186443633654823E-1};
constexpr std::array<double, 25> kI1eCoeffsBF64 = {
    7.51729631084210481353E-18,  4.41434832307170791151E-18,  -4.65030536848935832153E-17, -3.20952592199342395980E-17,
    2.96262899764595013876E-16,  3.30820231092092828324E-16,  -1.88035477551078244854E-15, -3.81440307243700780478E-15,
    1.04202769841288027642E-14,  4.27244001671195135429E-14,  -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12,  1.41258074366137813316E-11,  3.25260358301548823856E-11,
    -1.89749581235054123450E-11, -5.58974346219658380687E-10, -3.83538038596423702205E-9,  -2.63146884688951950684E-8,
    -2.51223623787020892529E-7,  -3.88256480887769039346E-6,  -1.10588938762623716291E-4,  -9.76109749136146840777E-3,
    7.78576235018280120474E-1};

template <class P, class A, class B>
Val<P> BesselI1e(Val<P> x, const A& coeffs_a, const B& coeffs_b) {
  const Val<P> z = Abs(x);
  Val<P> tmp = C<P>(0.5) * z;
  tmp = tmp - C<P>(2.0);
  Val<P> le8 = Chebyshev(tmp, coeffs_a);
  le8 = z * le8;
  tmp = C<P>(32.0) / z;
  tmp = tmp - C<P>(2.0);
  Val<P> gt8 = Chebyshev(tmp, coeffs_b);
  gt8 = gt8 / Sqrt(z);
  return Sign(x) * Sel(z <= C<P>(8.0), le8, gt8);
}

// ---- erf, erfc (Cephes for f64; f32 polynomials as Eigen's) ----

constexpr std::array<double, 9> kErfcP = {
    2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
    4.86371970985681366614E1,   1.96520832956077098242E2,  5.26445194995477358631E2,
    9.34528527171957607540E2,   1.02755188689515710272E3,  5.57535335369399327526E2};
constexpr std::array<double, 9> kErfcQ = {1.00000000000000000000E0, 1.32281951154744992508E1, 8.67072140885989742329E1,
                                          3.54937778887819891062E2, 9.75708501743205489753E2, 1.82390916687909736289E3,
                                          2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2};
constexpr std::array<double, 6> kErfcR = {5.64189583547755073984E-1, 1.27536670759978104416E0,
                                          5.01905042251180477414E0,  6.16021097993053585195E0,
                                          7.40974269950448939160E0,  2.97886665372100240670E0};
constexpr std::array<double, 7> kErfcS = {1.00000000000000000000E0, 2.26052863220117276590E0, 9.39603524938001434673E0,
                                          1.20489539808096656605E1, 1.70814450747565897222E1, 9.60896809063285878198E0,
                                          3.36907645100081516050E0};
constexpr std::array<double, 5> kErfT = {9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
                                         7.00332514112805075473E3, 5.55923013010394962768E4};
constexpr std::array<double, 6> kErfU = {1.00000000000000000000E0, 3.35617141647503099647E1, 5.21357949780152679795E2,
                                         4.59432382970980127987E3, 2.26290000613890934246E4, 4.92673942608635921086E4};

// |x| >= 1 (materializeErfcApproximationF64ForMagnituteGeOne).
Val<F64> ErfcF64GeOne(Val<F64> x) {
  using V = Val<F64>;
  const double kMaxlog = 7.09782712893383996843E2;
  const V z = -(x * x);
  const V exp_z = Exp(z);
  const V abs_x = Abs(x);
  const V approx_1_8 = (exp_z * Polynomial(abs_x, kErfcP)) / Polynomial(abs_x, kErfcQ);
  const V approx_8_inf = (exp_z * Polynomial(abs_x, kErfcR)) / Polynomial(abs_x, kErfcS);
  const V approx = Sel(abs_x < C<F64>(8.0), approx_1_8, approx_8_inf);
  const V zero = C<F64>(0.0);
  const V clamped = Sel(z < C<F64>(-kMaxlog), zero, approx);
  return Sel(x < zero, C<F64>(2.0) - clamped, clamped);
}

// |x| <= 1 (materializeErfApproximationF64ForMagnituteLeOne).
Val<F64> ErfF64LeOne(Val<F64> x) {
  const Val<F64> x2 = x * x;
  return (x * Polynomial(x2, kErfT)) / Polynomial(x2, kErfU);
}

Val<F64> ErfF64(Val<F64> x) {
  const Val<F64> one = C<F64>(1.0);
  const Val<F64> erf_approx = ErfF64LeOne(x);
  const Val<F64> erfc_based = one - ErfcF64GeOne(x);
  return Sel(Abs(x) < one, erf_approx, erfc_based);
}

Val<F64> ErfcF64(Val<F64> x) {
  const Val<F64> one = C<F64>(1.0);
  const Val<F64> erfc_approx = ErfcF64GeOne(x);
  const Val<F64> erf_based = one - ErfF64LeOne(x);
  return Sel(Abs(x) < one, erf_based, erfc_approx);
}

constexpr std::array<float, 9> kErfcPF32 = {+2.326819970068386E-2f, -1.387039388740657E-1f, +3.687424674597105E-1f,
                                            -5.824733027278666E-1f, +6.210004621745983E-1f, -4.944515323274145E-1f,
                                            +3.404879937665872E-1f, -2.741127028184656E-1f, +5.638259427386472E-1f};
constexpr std::array<float, 8> kErfcRF32 = {-1.047766399936249E+1f, +1.297719955372516E+1f, -7.495518717768503E+0f,
                                            +2.921019019210786E+0f, -1.015265279202700E+0f, +4.218463358204948E-1f,
                                            -2.820767439740514E-1f, +5.641895067754075E-1f};
constexpr std::array<float, 7> kErfTF32 = {+7.853861353153693E-5f, -8.010193625184903E-4f, +5.188327685732524E-3f,
                                           -2.685381193529856E-2f, +1.128358514861418E-1f, -3.761262582423300E-1f,
                                           +1.128379165726710E+0f};
constexpr std::array<float, 7> kErfAlphaF32 = {-2.72614225801306e-10f, 2.77068142495902e-08f,  -2.10102402082508e-06f,
                                               -5.69250639462346e-05f, -7.34990630326855e-04f, -2.95459980854025e-03f,
                                               -1.60960333262415e-02f};
constexpr std::array<float, 5> kErfBetaF32 = {-1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f,
                                              -7.37332916720468e-03f, -1.42647390514189e-02f};

// |x| >= 1 (materializeErfcApproximationF32ForMagnitudeGeOne).
Val<F32> ErfcF32GeOne(Val<F32> x) {
  using V = Val<F32>;
  const double kMaxlog = 88.72283905206835;
  const V x2 = x * x;
  const V z = -x2;
  const V abs_x = Abs(x);
  const V one = C<F32>(1.0);
  const V reciprocal_x2 = one / x2;
  const V exp_z = Exp(z);
  const V one_div_abs_x = one / abs_x;
  const V exp_z_div_abs_x = exp_z * one_div_abs_x;
  const V two = C<F32>(2.0);
  const V poly_p = Polynomial(reciprocal_x2, kErfcPF32);
  const V poly_r = Polynomial(reciprocal_x2, kErfcRF32);
  const V approx = exp_z_div_abs_x * Sel(abs_x < two, poly_p, poly_r);
  const V zero = C<F32>(0.0);
  const V clamped = Sel(z < C<F32>(-kMaxlog), zero, approx);
  return Sel(x < zero, two - clamped, clamped);
}

Val<F32> ErfF32LeOne(Val<F32> x) { return x * Polynomial(x * x, kErfTF32); }

// materializeErfApproximationF32: Eigen's rational approximation on [-4, 4].
Val<F32> ErfF32(Val<F32> x) {
  x = Clamp(C<F32>(-4.0), x, C<F32>(4.0));
  const Val<F32> x2 = x * x;
  const Val<F32> erf = (x * Polynomial(x2, kErfAlphaF32)) / Polynomial(x2, kErfBetaF32);
  return Clamp(C<F32>(-1.0), erf, C<F32>(1.0));
}

Val<F32> ErfcF32(Val<F32> x) {
  const Val<F32> one = C<F32>(1.0);
  const Val<F32> erfc_approx = ErfcF32GeOne(x);
  const Val<F32> erf_based = one - ErfF32LeOne(x);
  return Sel(Abs(x) < one, erf_based, erfc_approx);
}

// ---- erf_inv (erfInv32, erfInv64: Giles' approximation) ----

constexpr std::array<float, 9> kErfInvLt5 = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                             -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                             -0.00417768164f,  0.246640727f,    1.50140941f};
constexpr std::array<float, 9> kErfInvGe5 = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                             -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                             0.00943887047f,   1.00167406f,     2.83297682f};

Val<F32> ErfInvF32(Val<F32> x) {
  using V = Val<F32>;
  V w = -Log1p(x * -x);
  const bool lt = w < C<F32>(5.0);
  auto coefficient = [&](int i) { return Sel(lt, C<F32>(kErfInvLt5[i]), C<F32>(kErfInvGe5[i])); };
  w = Sel(lt, w - C<F32>(2.5), Sqrt(w) - C<F32>(3.0));
  V p = coefficient(0);
  for (int i = 1; i < 9; ++i) p = coefficient(i) + p * w;
  const V result = p * x;
  return Sel(Abs(x) == C<F32>(1), x * C<F32>(kInf), result);
}

constexpr std::array<double, 23> kErfInvLt625 = {
    -3.6444120640178196996e-21, -1.685059138182016589e-19,  1.2858480715256400167e-18,  1.115787767802518096e-17,
    -1.333171662854620906e-16,  2.0972767875968561637e-17,  6.6376381343583238325e-15,  -4.0545662729752068639e-14,
    -8.1519341976054721522e-14, 2.6335093153082322977e-12,  -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
    -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352,   -0.00074070253416626697512,
    -0.0060336708714301490533,  0.24015818242558961693,     1.6536545626831027356};
constexpr std::array<double, 19> kErfInvLt16 = {
    2.2137376921775787049e-09,  9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
    1.5027403968909827627e-06,  -4.013867526981545969e-06, 2.9234449089955446044e-06,  1.2475304481671778723e-05,
    -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05,  -0.0003550375203628474796,
    0.00095328937973738049703,  -0.0016882755560235047313, 0.0024914420961078508066,   -0.0037512085075692412107,
    0.005370914553590063617,    1.0052589676941592334,     3.0838856104922207635};
constexpr std::array<double, 17> kErfInvGe16 = {
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,  -3.7894654401267369937e-09,
    7.6157012080783393804e-09,  -1.4960026627149240478e-08, 2.9147953450901080826e-08,  -6.7711997758452339498e-08,
    2.2900482228026654717e-07,  -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
    7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026, 1.0103004648645343977,
    4.8499064014085844221};

Val<F64> ErfInvF64(Val<F64> x) {
  using V = Val<F64>;
  V w = -Log1p(x * -x);
  const bool lt625 = w < C<F64>(6.25);
  const bool lt16 = w < C<F64>(16);
  auto coefficient = [&](int i) {
    V c = C<F64>(kErfInvLt625[i]);
    if (i < 19) c = Sel(lt625, c, C<F64>(kErfInvLt16[i]));
    if (i < 17) c = Sel(lt16, c, C<F64>(kErfInvGe16[i]));
    return c;
  };
  const V sqrt_w = Sqrt(w);
  const V w_minus_3125 = w - C<F64>(3.125);
  const V shifted = sqrt_w - Sel(lt16, C<F64>(3.25), C<F64>(5.0));
  w = Sel(lt625, w_minus_3125, shifted);
  V p = coefficient(0);
  for (int i = 1; i < 17; ++i) p = coefficient(i) + p * w;
  for (int i = 17; i < 19; ++i) p = Sel(lt16, coefficient(i) + p * w, p);
  for (int i = 19; i < 23; ++i) p = Sel(lt625, coefficient(i) + p * w, p);
  const V result = p * x;
  return Sel(Abs(x) == C<F64>(1), x * C<F64>(kInf), result);
}

// ---- lgamma, digamma (Lanczos, g = 7, n = 9) ----

constexpr double kLanczosGamma = 7;
constexpr double kBaseLanczosCoeff = 0.99999999999980993227684700473478;
constexpr std::array<double, 8> kLanczosCoefficients = {
    676.520368121885098567009190444019, -1259.13921672240287047156078755283,
    771.3234287776530788486528258894,   -176.61502916214059906584551354,
    12.507343278686904814458936853,     -0.13857109526572011689554707,
    9.984369578019570859563e-6,         1.50563273514931155834e-7};

template <class P>
Val<P> Lgamma(Val<P> x) {
  using V = Val<P>;
  const V half = C<P>(0.5);
  const bool reflect = x < half;
  const V one = C<P>(1);
  const V z = Sel(reflect, -x, x - one);
  V a = C<P>(kBaseLanczosCoeff);
  for (size_t i = 0; i < kLanczosCoefficients.size(); ++i) {
    a = a + C<P>(kLanczosCoefficients[i]) / (z + C<P>(static_cast<double>(i + 1)));
  }
  const V lanczos_plus_half = C<P>(kLanczosGamma + 0.5);
  const V t = lanczos_plus_half + z;
  const V log_t = C<P>(std::log(kLanczosGamma + 0.5)) + Log1p(z / lanczos_plus_half);
  // r = (z + 1/2 - t / log(t)) * log(t), which does not overflow where (z + 1/2) * log(t) - t would.
  const V r = ((z + half) - t / log_t) * log_t;
  V lgamma = (C<P>((std::log(2.0) + std::log(kPi)) / 2) + r) + Log(a);
  // Reflection: lgamma(x) = log(pi) - lgamma(1 - x) - log(|sin(pi * frac(|x|))|), with frac folded onto [0, 0.5].
  const V abs_x = Abs(x);
  V abs_frac = abs_x - Floor(abs_x);
  abs_frac = Sel(half < abs_frac, one - abs_frac, abs_frac);
  const V reflection_denom = Log(Sin(C<P>(kPi) * abs_frac));
  V reflection = (C<P>(std::log(kPi)) - reflection_denom) - lgamma;
  reflection = Sel(IsFinite(reflection_denom), reflection, -reflection_denom);
  lgamma = Sel(reflect, reflection, lgamma);
  return Sel(Abs(x) == C<P>(kInf), C<P>(kInf), lgamma);
}

template <class P>
Val<P> Digamma(Val<P> x) {
  using V = Val<P>;
  const V half = C<P>(0.5);
  const bool reflect = x < half;
  const V one = C<P>(1);
  const V z = Sel(reflect, -x, x - one);
  const V zero = C<P>(0.0);
  V a = C<P>(kBaseLanczosCoeff);
  V a_prime = zero;
  for (size_t i = 0; i < kLanczosCoefficients.size(); ++i) {
    const V coeff = C<P>(kLanczosCoefficients[i]);
    const V z_term = z + C<P>(static_cast<double>(i + 1));
    a_prime = a_prime - coeff / (z_term * z_term);
    a = a + coeff / z_term;
  }
  const V lanczos_plus_half = C<P>(kLanczosGamma + 0.5);
  const V t = lanczos_plus_half + z;
  const V log_t = C<P>(std::log(kLanczosGamma + 0.5)) + Log1p(z / lanczos_plus_half);
  V digamma = (log_t + a_prime / a) - C<P>(kLanczosGamma) / t;
  // Reflection: digamma(x) = digamma(1 - x) - pi * cos(pi * x) / sin(pi * x), x shifted into [-0.5, 0.5].
  const V reduced_x = x + Abs(Floor(x + C<P>(0.5)));
  const V pi = C<P>(kPi);
  const V pi_x = pi * reduced_x;
  const V reflection = digamma - (pi * Cos(pi_x)) / Sin(pi_x);
  digamma = Sel(reflect, reflection, digamma);
  // Poles: NaN at negative integers, -inf at zero.
  const bool negative_integer = x < zero && x == Floor(x);
  const V with_nan = Sel(negative_integer, C<P>(kNaN), digamma);
  return Sel(x == zero, C<P>(-kInf), with_nan);
}

// ---- zeta (Hurwitz; Euler-Maclaurin as XLA's math.cc), polygamma ----

constexpr std::array<double, 12> kZetaCoeffs = {-7.1661652561756670113e18,
                                                1.8152105401943546773e17,
                                                -4.5979787224074726105e15,
                                                1.1646782814350067249e14,
                                                -2.950130727918164224e12,
                                                7.47242496e10,
                                                -1.8924375803183791606e9,
                                                47900160.0,
                                                -1209600.0,
                                                30240.0,
                                                -720.0,
                                                12.0};

template <class P>
Val<P> Zeta(Val<P> x, Val<P> q) {
  using V = Val<P>;
  constexpr int kTerms = 12, kIters = 9, kTwoTermsMinusOne = 2 * kTerms - 1;
  const V zero = C<P>(0.0), one = C<P>(1.0);
  V acc = q;
  V q_neg_power = zero;
  const V neg_x = -x;
  V power_sum = Pow(q, neg_x);
  for (int i = 0; i < kIters; ++i) {
    acc = acc + one;
    q_neg_power = Pow(acc, neg_x);
    power_sum = power_sum + q_neg_power;
  }
  acc = acc + one;
  q_neg_power = Pow(acc, neg_x);
  const V correction = (q_neg_power * acc) / (x - one);
  const V rsqrt_acc = one / (acc * acc);  // not rsqrt: the decomposition divides
  V horner_sum = zero;
  for (int i = 0; i < kTerms - 1; ++i) {
    const V factor_lhs = x + C<P>(kTwoTermsMinusOne - 1 - 2 * i);
    const V factor_rhs = x + C<P>(kTwoTermsMinusOne - 2 - 2 * i);
    const V horner_product = factor_lhs * factor_rhs;
    horner_sum = horner_product * (rsqrt_acc * (horner_sum + C<P>(1. / kZetaCoeffs[i])));
  }
  const V tail = q_neg_power * (C<P>(.5) + (x / acc) * (C<P>(1. / kZetaCoeffs[kTerms - 1]) + horner_sum));
  const V accurate = (power_sum + correction) + tail;
  V out = Sel(Abs(q_neg_power) < Abs(power_sum) * C<P>(P::kSmallest), power_sum, accurate);
  const V nan = C<P>(kNaN);
  out = Sel(x < one, nan, out);  // not defined for x < 1
  const bool q_le_zero = q <= zero;
  out = Sel(q_le_zero && x != Floor(x), nan, out);  // q <= 0 needs an integer x
  const bool at_pole = q_le_zero && q == Floor(q);
  const bool x_even_int = x == Floor(x) && Rem(x, C<P>(2.0)) == zero;
  out = Sel(at_pole, Sel(x_even_int, C<P>(kInf), nan), out);
  return Sel(x == one, C<P>(kInf), out);  // the harmonic series
}

template <class P>
Val<P> Polygamma(Val<P> n, Val<P> x) {
  using V = Val<P>;
  const V one = C<P>(1.0), two = C<P>(2.0);
  const V sign = (two * Rem(n, two)) - one;
  const V n_plus_one = n + one;
  V result = (sign * Exp(Lgamma(n_plus_one))) * Zeta(n_plus_one, x);
  const V zero = C<P>(0.0);
  result = Sel(n == zero, Digamma(x), result);
  const bool non_natural = n != Floor(n) || n < zero;
  return Sel(non_natural, C<P>(kNaN), result);
}

// ---- hyperbolic and inverse trigonometric functions ----

// cosh(x) = e^(x + log(1/2)) + e^(-x + log(1/2)).
template <class P>
Val<P> Cosh(Val<P> x) {
  const Val<P> log_half = Log(C<P>(0.5));
  return Exp(x + log_half) + Exp(log_half - x);
}

// sinh(x) = (expm1(x) + expm1(x) / (expm1(x) + 1)) / 2 for |x| < 1, else e^(x + log(1/2)) - e^(-x + log(1/2)).
template <class P>
Val<P> Sinh(Val<P> x) {
  using V = Val<P>;
  const V log_half = Log(C<P>(0.5));
  const V large = Exp(x + log_half) - Exp(log_half - x);
  const V expm1 = Expm1(x);
  const V one = C<P>(1.0);
  const V small = C<P>(0.5) * (expm1 + expm1 / (expm1 + one));
  return Sel(Abs(x) < one, small, large);
}

// ChloDecompositionPatternsMath.td: acos(x) = 2 * atan2(sqrt((1 - x) * (1 + x)), 1 + x).
template <class P>
Val<P> Acos(Val<P> x) {
  const Val<P> one = C<P>(1);
  const Val<P> one_plus_x = one + x;
  return C<P>(2) * Atan2(Sqrt((one - x) * one_plus_x), one_plus_x);
}

// ChloDecompositionPatternsMath.td: asin(x) = 2 * atan2(x, 1 + sqrt((1 - x) * (1 + x))).
template <class P>
Val<P> Asin(Val<P> x) {
  const Val<P> one = C<P>(1);
  return C<P>(2) * Atan2(x, one + Sqrt((one - x) * (one + x)));
}

// ChloDecompositionPatternsMath.td: acosh(x) = log(2) + log(x) for x >= max/2, else
// log1p(sqrt(x - 1) * (sqrt(x + 1) + sqrt(x - 1))).
template <class P>
Val<P> Acosh(Val<P> x) {
  const Val<P> two = C<P>(2);
  const Val<P> one = C<P>(1);
  const Val<P> sqrt_x_minus_one = Sqrt(x - one);
  return Sel(x >= C<P>(P::kMax) / two, Log(two) + Log(x), Log1p(sqrt_x_minus_one * (Sqrt(x + one) + sqrt_x_minus_one)));
}

// ChloDecompositionPatternsMath.td: asinh(x) = sign(x) * (log(2) + log(|x|)) for |x| >= sqrt(max), else
// sign(x) * log1p(|x| + x^2 / (1 + sqrt(1 + x^2))).
template <class P>
Val<P> Asinh(Val<P> x) {
  const Val<P> ax = Abs(x);
  const Val<P> one = C<P>(1);
  const Val<P> ax2 = ax * ax;
  return Sign(x) * Sel(ax >= Sqrt(C<P>(P::kMax)), Log(C<P>(2)) + Log(ax), Log1p(ax + ax2 / (one + Sqrt(one + ax2))));
}

// ChloDecompositionPatterns.td: atan(x) = atan2(x, 1).
template <class P>
Val<P> Atan(Val<P> x) {
  return Atan2(x, C<P>(1));
}

// ChloDecompositionPatterns.td: atanh(x) = NaN for |x| > 1, else (log1p(x) - log1p(-x)) * 0.5.
template <class P>
Val<P> Atanh(Val<P> x) {
  return Sel(Abs(x) > C<P>(1), C<P>(kNaN), (Log1p(x) - Log1p(-x)) * C<P>(0.5));
}

// ChloDecompositionPatterns.td: tan(x) = sin(x) / cos(x).
template <class P>
Val<P> Tan(Val<P> x) {
  return Sin(x) / Cos(x);
}

// The legalization upcasts these to f32 when the type is narrower (materializeWithUpcast).
bool UpcastsToF32(ChloUnaryOp op) {
  switch (op) {
    case ChloUnaryOp::kLgamma:
    case ChloUnaryOp::kDigamma:
    case ChloUnaryOp::kErf:
    case ChloUnaryOp::kErfc:
    case ChloUnaryOp::kErfInv:
    case ChloUnaryOp::kBesselI1e:
    case ChloUnaryOp::kCosh:
    case ChloUnaryOp::kSinh: return true;
    default: return false;
  }
}

// The op evaluated in P (no upcast). The f64/f32 forks of erf, erfc, erf_inv and bessel_i1e are the
// legalization's: f64 has its own coefficients, everything else runs the f32 ones.
template <class P>
double UnaryIn(ChloUnaryOp op, double x_value) {
  const Val<P> x{x_value};
  constexpr bool kF64 = std::is_same_v<P, F64>;
  switch (op) {
    case ChloUnaryOp::kLgamma: return Lgamma(x).v;
    case ChloUnaryOp::kDigamma: return Digamma(x).v;
    case ChloUnaryOp::kErf: return kF64 ? ErfF64({x_value}).v : ErfF32({F32::Round(x_value)}).v;
    case ChloUnaryOp::kErfc: return kF64 ? ErfcF64({x_value}).v : ErfcF32({F32::Round(x_value)}).v;
    case ChloUnaryOp::kErfInv: return kF64 ? ErfInvF64({x_value}).v : ErfInvF32({F32::Round(x_value)}).v;
    case ChloUnaryOp::kBesselI1e:
      return kF64 ? BesselI1e(x, kI1eCoeffsAF64, kI1eCoeffsBF64).v : BesselI1e(x, kI1eCoeffsAF32, kI1eCoeffsBF32).v;
    case ChloUnaryOp::kCosh: return Cosh(x).v;
    case ChloUnaryOp::kSinh: return Sinh(x).v;
    case ChloUnaryOp::kAcos: return Acos(x).v;
    case ChloUnaryOp::kAsin: return Asin(x).v;
    case ChloUnaryOp::kAcosh: return Acosh(x).v;
    case ChloUnaryOp::kAsinh: return Asinh(x).v;
    case ChloUnaryOp::kAtan: return Atan(x).v;
    case ChloUnaryOp::kAtanh: return Atanh(x).v;
    case ChloUnaryOp::kTan: return Tan(x).v;
  }
  return kNaN;
}

// A narrow type: the upcasting ops run in f32 and round back once; the others run in the type.
template <class P>
double UnaryNarrow(ChloUnaryOp op, double x) {
  if (UpcastsToF32(op)) return P::Round(UnaryIn<F32>(op, x));
  return UnaryIn<P>(op, x);
}

// chlo.next_after on the bit patterns (materializeNextAfter), for a `Bits`-wide float type.
template <class Bits>
Bits NextAfterBits(Bits x, Bits y, bool x_nan, bool y_nan, bool equal, Bits nan) {
  constexpr Bits kSign = Bits(1) << (sizeof(Bits) * 8 - 1);
  if (x_nan || y_nan) return nan;
  if (equal) return y;
  const Bits x_abs = x & ~kSign, y_abs = y & ~kSign;
  if (x_abs == 0) return y_abs == 0 ? y : static_cast<Bits>((y & kSign) | 1);
  const bool smaller = x_abs > y_abs || (x & kSign) != (y & kSign);
  return static_cast<Bits>(smaller ? x - 1 : x + 1);
}

double NextAfter(ElementType type, double x, double y) {
  const bool x_nan = std::isnan(x), y_nan = std::isnan(y), equal = x == y;
  switch (type) {
    case ElementType::kF64: {
      uint64_t xb, yb, nb;
      std::memcpy(&xb, &x, 8);
      std::memcpy(&yb, &y, 8);
      const double nan = kNaN;
      std::memcpy(&nb, &nan, 8);
      const uint64_t r = NextAfterBits<uint64_t>(xb, yb, x_nan, y_nan, equal, nb);
      double out;
      std::memcpy(&out, &r, 8);
      return out;
    }
    case ElementType::kF32: {
      const float xf = static_cast<float>(x), yf = static_cast<float>(y), nan = std::numeric_limits<float>::quiet_NaN();
      uint32_t xb, yb, nb;
      std::memcpy(&xb, &xf, 4);
      std::memcpy(&yb, &yf, 4);
      std::memcpy(&nb, &nan, 4);
      const uint32_t r = NextAfterBits<uint32_t>(xb, yb, x_nan, y_nan, equal, nb);
      float out;
      std::memcpy(&out, &r, 4);
      return out;
    }
    case ElementType::kF16:
    case ElementType::kBF16: {
      const FloatFormat& f = *SmallFloatFormat(type);
      const auto xb = static_cast<uint16_t>(EncodeFloat(f, x)), yb = static_cast<uint16_t>(EncodeFloat(f, y));
      const auto nb = static_cast<uint16_t>(EncodeFloat(f, kNaN));
      return DecodeFloatToDouble(f, NextAfterBits<uint16_t>(xb, yb, x_nan, y_nan, equal, nb));
    }
    default: return kNaN;
  }
}

template <class P>
double BinaryIn(ChloBinaryOp op, double x, double y) {
  switch (op) {
    case ChloBinaryOp::kZeta: return Zeta(Val<P>{x}, Val<P>{y}).v;
    case ChloBinaryOp::kPolygamma: return Polygamma(Val<P>{x}, Val<P>{y}).v;
    case ChloBinaryOp::kNextAfter: break;
  }
  return kNaN;
}

struct OpName {
  std::string_view name;
  int op;
};
constexpr OpName kUnaryNames[] = {
    {"chlo.lgamma", int(ChloUnaryOp::kLgamma)},  {"chlo.digamma", int(ChloUnaryOp::kDigamma)},
    {"chlo.erf", int(ChloUnaryOp::kErf)},        {"chlo.erfc", int(ChloUnaryOp::kErfc)},
    {"chlo.erf_inv", int(ChloUnaryOp::kErfInv)}, {"chlo.bessel_i1e", int(ChloUnaryOp::kBesselI1e)},
    {"chlo.cosh", int(ChloUnaryOp::kCosh)},      {"chlo.sinh", int(ChloUnaryOp::kSinh)},
    {"chlo.acos", int(ChloUnaryOp::kAcos)},      {"chlo.asin", int(ChloUnaryOp::kAsin)},
    {"chlo.acosh", int(ChloUnaryOp::kAcosh)},    {"chlo.asinh", int(ChloUnaryOp::kAsinh)},
    {"chlo.atan", int(ChloUnaryOp::kAtan)},      {"chlo.atanh", int(ChloUnaryOp::kAtanh)},
    {"chlo.tan", int(ChloUnaryOp::kTan)},
};
constexpr OpName kBinaryNames[] = {
    {"chlo.zeta", int(ChloBinaryOp::kZeta)},
    {"chlo.polygamma", int(ChloBinaryOp::kPolygamma)},
    {"chlo.next_after", int(ChloBinaryOp::kNextAfter)},
};

// Buffer element <-> double.
double Load(ElementType type, const void* base, int64_t i) {
  switch (type) {
    case ElementType::kF64: {
      double v;
      std::memcpy(&v, static_cast<const char*>(base) + i * 8, 8);
      return v;
    }
    case ElementType::kF32: {
      float v;
      std::memcpy(&v, static_cast<const char*>(base) + i * 4, 4);
      return v;
    }
    default: {
      uint16_t b;
      std::memcpy(&b, static_cast<const char*>(base) + i * 2, 2);
      return type == ElementType::kF16 ? HalfToFloat(b) : Bf16ToFloat(b);
    }
  }
}

void Store(ElementType type, void* base, int64_t i, double v) {
  switch (type) {
    case ElementType::kF64: std::memcpy(static_cast<char*>(base) + i * 8, &v, 8); return;
    case ElementType::kF32: {
      const float f = static_cast<float>(v);
      std::memcpy(static_cast<char*>(base) + i * 4, &f, 4);
      return;
    }
    default: {
      // v is a value of the type (or NaN): one exact conversion keeps its bits, NaN sign included.
      const uint16_t b = static_cast<uint16_t>(EncodeFloat(*SmallFloatFormat(type), v));
      std::memcpy(static_cast<char*>(base) + i * 2, &b, 2);
      return;
    }
  }
}

}  // namespace

bool ChloUnaryOpFromName(std::string_view op_name, ChloUnaryOp* op) {
  for (const OpName& n : kUnaryNames) {
    if (n.name == op_name) {
      *op = static_cast<ChloUnaryOp>(n.op);
      return true;
    }
  }
  return false;
}

bool ChloBinaryOpFromName(std::string_view op_name, ChloBinaryOp* op) {
  for (const OpName& n : kBinaryNames) {
    if (n.name == op_name) {
      *op = static_cast<ChloBinaryOp>(n.op);
      return true;
    }
  }
  return false;
}

std::string_view ChloOpName(ChloUnaryOp op) {
  for (const OpName& n : kUnaryNames) {
    if (n.op == int(op)) return n.name;
  }
  return "chlo.?";
}

std::string_view ChloOpName(ChloBinaryOp op) {
  for (const OpName& n : kBinaryNames) {
    if (n.op == int(op)) return n.name;
  }
  return "chlo.?";
}

bool ChloSupportsElementType(ElementType type) {
  return type == ElementType::kF16 || type == ElementType::kBF16 || type == ElementType::kF32 ||
         type == ElementType::kF64;
}

double EvalChloUnary(ChloUnaryOp op, ElementType type, double x) {
  switch (type) {
    case ElementType::kF64: return UnaryIn<F64>(op, x);
    case ElementType::kF32: return UnaryIn<F32>(op, x);
    case ElementType::kF16: return UnaryNarrow<F16>(op, x);
    case ElementType::kBF16: return UnaryNarrow<BF16>(op, x);
    default: return kNaN;
  }
}

double EvalChloBinary(ChloBinaryOp op, ElementType type, double x, double y) {
  if (op == ChloBinaryOp::kNextAfter) return NextAfter(type, x, y);
  // zeta and polygamma upcast to f32 (materializeWithUpcast).
  switch (type) {
    case ElementType::kF64: return BinaryIn<F64>(op, x, y);
    case ElementType::kF32: return BinaryIn<F32>(op, x, y);
    case ElementType::kF16: return F16::Round(BinaryIn<F32>(op, x, y));
    case ElementType::kBF16: return BF16::Round(BinaryIn<F32>(op, x, y));
    default: return kNaN;
  }
}

Status ApplyChloUnary(ChloUnaryOp op, ElementType type, const void* x, void* out, int64_t n) {
  if (!ChloSupportsElementType(type)) {
    return Unimplemented("%s: element type %s is not supported (f16, bf16, f32, f64)",
                         std::string(ChloOpName(op)).c_str(), std::string(ElementTypeName(type)).c_str());
  }
  for (int64_t i = 0; i < n; ++i) Store(type, out, i, EvalChloUnary(op, type, Load(type, x, i)));
  return Ok();
}

Status ApplyChloBinary(ChloBinaryOp op, ElementType type, const void* x, const void* y, void* out, int64_t n) {
  if (!ChloSupportsElementType(type)) {
    return Unimplemented("%s: element type %s is not supported (f16, bf16, f32, f64)",
                         std::string(ChloOpName(op)).c_str(), std::string(ElementTypeName(type)).c_str());
  }
  for (int64_t i = 0; i < n; ++i) {
    Store(type, out, i, EvalChloBinary(op, type, Load(type, x, i), Load(type, y, i)));
  }
  return Ok();
}

}  // namespace neuronmem::numerics
