// Special functions of torch.special for float, vf and double: the modified Bessel functions
// i0 i0e i1 i1e k0 k1 (and the scaled k0 k1), the Bessel functions j0 j1 y0 y1, the spherical
// Bessel function j0, airy_ai, erfcx, log_ndtr, ndtri, the Hurwitz zeta function, the
// regularized incomplete gamma functions igamma / igammac, nextafter, and the orthogonal
// polynomials (Chebyshev T U V W and their shifted forms, Hermite H and He, Laguerre L,
// Legendre P) of a degree n given as a float.
//
// All are lane-wise loops (cost class Lanewise in ember/ir/scalar_ops.h). Except for nextafter and
// the polynomials, the float and vf versions evaluate the double version and round once, so
// their error is 0.5 ulp plus the double version's. The double versions follow the algorithms of
// torch's CPU kernels, which are those of the Cephes Math Library (Chebyshev expansions and
// rational approximations; S. L. Moshier) and SciPy's incomplete gamma functions (series,
// continued fraction and Temme's uniform asymptotic expansion), with the same coefficients and
// special values, so that they agree with torch's float64 results to a few ulps:
//   i0 i0e i1 i1e k0 k1 scaled k0 k1   Chebyshev series on [0, 8] and (8, inf) (k: [0, 2], (2,
//              inf)). k0, k1 are +inf at 0 and NaN below 0.
//   j0 j1 y0 y1   rational approximations below 5, Hankel's asymptotic form above; y0, y1 are
//              -inf at 0 and NaN below 0; all are NaN at +-inf.
//   airy_ai    power series on (-2.09, 2.09), asymptotic forms outside; 0 past 103.892, NaN at
//              +-inf.
//   erfcx      e^{x^2} erfc(x) with x^2 split exactly (hi + lo) below 12, the asymptotic series
//              above; 2 e^{x^2} - erfcx(-x) for x < 0 (+inf below -26.7).
//   log_ndtr   log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 below -1, log1p(-erfc(x / sqrt 2) / 2) above.
//   ndtri      the Abramowitz-Stegun 26.2.23 first guess (error < 4.5e-4), then three Halley steps
//              on ndtr written with erfc (no cancellation in the lower tail); -inf at 0, +inf at
//              1, NaN outside [0, 1].
//   zeta(x, q) the Hurwitz zeta function: direct sum, then the Euler-Maclaurin tail; +inf at x =
//              1 and at q a non-positive integer, NaN for x < 1 and for q < 0 with x not an
//              integer.
//   igamma(a, x), igammac(a, x)   P(a, x) and Q(a, x) = 1 - P: NaN for a < 0 or x < 0,
//              P(0, x > 0) = 1, P(a, 0) = 0, NaN at a = inf = x. The asymptotic series takes pi
//              rounded to float, as torch's does (1e-9 relative in float64).
//   nextafter  the C library's, in the operands' own precision.
//   polynomials   torch's recurrences and special cases (0 for n < 0, closed forms at |x| = 1,
//              the trigonometric forms of the Chebyshev polynomials for |x| < 1 and large n;
//              Hermite NaN past degree 128 in float32, 512 in float64), evaluated in the
//              operands' own precision as torch does, so that overflow gives the same NaN or inf.
//              The degree is truncated toward zero; NaN, +-inf and degrees past int64 count as
//              negative.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "math_special.h"

namespace ember_rt {
namespace special_detail {

constexpr double kPi = 3.14159265358979323846;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// pi rounded to float, where torch's incomplete gamma uses it (its float64 results differ from
// the exact pi's by 1e-9 relative).
constexpr double kPiFloat = static_cast<double>(3.14159265358979323846f);

// c[0] x^(n-1) + ... + c[n-1] (Horner), and the same with a leading coefficient 1 before c.
template <int N>
inline double poly(double x, const double (&c)[N]) {
  double r = 0.0;
  for (double v : c) r = r * x + v;
  return r;
}
// Clenshaw's sum of a Chebyshev series (Cephes chbevl).
template <int N>
inline double chbevl(double x, const double (&c)[N]) {
  double b0 = c[0], b1 = 0.0, b2 = 0.0;
  for (int i = 1; i < N; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = x * b1 - b2 + c[i];
  }
  return 0.5 * (b0 - b2);
}

// ---- modified Bessel functions ---------------------------------------------------------------

// exp(-x) I0(x) on [0, 8] in y = x / 2 - 2, and exp(-x) sqrt(x) I0(x) on (8, inf) in 32 / x - 2.
constexpr double kI0A[] = {
    -4.41534164647933937950E-18, 3.33079451882223809783E-17,  -2.43127984654795469359E-16,
    1.71539128555513303061E-15,  -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12,  -1.72682629144155570723E-11,
    9.67580903537323691224E-11,  -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8,  6.04699502254191894932E-8,   -2.67079385394061173391E-7,
    1.11738753912010371815E-6,   -4.41673835845875056359E-6,  1.64484480707288970893E-5,
    -5.75419501008210370398E-5,  1.88502885095841655729E-4,   -5.76375574538582365885E-4,
    1.63947561694133579842E-3,   -4.32430999505057594430E-3,  1.05464603945949983183E-2,
    -2.37374148058994688156E-2,  4.93052842396707084878E-2,   -9.49010970480476444210E-2,
    1.71620901522208775349E-1,   -3.04682672343198398683E-1,  6.76795274409476084995E-1};
constexpr double kI0B[] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17,  -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15,  3.81168066935262242075E-15,  -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14,  3.85277838274214270114E-13,
    7.18012445138366623367E-13,  -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11,  4.94060238822496958910E-10,
    3.39623202570838634515E-9,   2.26666899049817806459E-8,   2.04891858946906374183E-7,
    2.89137052083475648297E-6,   6.88975834691682398426E-5,   3.36911647825569408990E-3,
    8.04490411014108831608E-1};
// exp(-x) I1(x) / x on [0, 8], exp(-x) sqrt(x) I1(x) on (8, inf).
constexpr double kI1A[] = {
    2.77791411276104639959E-18,  -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15,  -5.04218550472791168711E-14,
    3.22379336594557470981E-13,  -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10,  -1.88724975172282928790E-9,
    9.38153738649577178388E-9,   -4.44505912879632808065E-8,  2.00329475355213526229E-7,
    -8.56872026469545474066E-7,  3.47025130813767847674E-6,   -1.32731636560394358279E-5,
    4.78156510755005422638E-5,   -1.61760815825896745588E-4,  5.12285956168575772895E-4,
    -1.51357245063125314899E-3,  4.15642294431288815669E-3,   -1.05640848946261981558E-2,
    2.47264490306265168283E-2,   -5.29459812080949914269E-2,  1.02643658689847095384E-1,
    -1.76416518357834055153E-1,  2.52587186443633654823E-1};
constexpr double kI1B[] = {
    7.51729631084210481353E-18,  4.41434832307170791151E-18,  -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16,  3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14,  -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12,  1.41258074366137813316E-11,
    3.25260358301548823856E-11,  -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9,  -2.63146884688951950684E-8,  -2.51223623787020892529E-7,
    -3.88256480887769039346E-6,  -1.10588938762623716291E-4,  -9.76109749136146840777E-3,
    7.78576235018280120474E-1};
// K0(x) + log(x / 2) I0(x) on [0, 2] in x^2 - 2, and exp(x) sqrt(x) K0(x) on (2, inf) in 8 / x - 2.
constexpr double kK0A[] = {1.37446543561352307156e-16, 4.25981614279661018399e-14,
                           1.03496952576338420167e-11, 1.90451637722020886025e-09,
                           2.53479107902614945675e-07, 2.28621210311945178607e-05,
                           1.26461541144692592338e-03, 3.59799365153615016266e-02,
                           3.44289899924628486886e-01, -5.35327393233902768720e-01};
constexpr double kK0B[] = {
    5.30043377268626276149e-18,  -1.64758043015242134646e-17, 5.21039150503902756861e-17,
    -1.67823109680541210385e-16, 5.51205597852431940784e-16,  -1.84859337734377901440e-15,
    6.34007647740507060557e-15,  -2.22751332699166985548e-14, 8.03289077536357521100e-14,
    -2.98009692317273043925e-13, 1.14034058820847496303e-12,  -4.51459788337394416547e-12,
    1.85594911495471785253e-11,  -7.95748924447710747776e-11, 3.57739728140030116597e-10,
    -1.69753450938905987466e-09, 8.57403401741422608519e-09,  -4.66048989768794782956e-08,
    2.76681363944501510342e-07,  -1.83175552271911948767e-06, 1.39498137188764993662e-05,
    -1.28495495816278026384e-04, 1.56988388573005337491e-03,  -3.14481013119645005427e-02,
    2.44030308206595545468e+00};
// x (K1(x) - log(x / 2) I1(x)) on [0, 2], exp(x) sqrt(x) K1(x) on (2, inf).
constexpr double kK1A[] = {
    -7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
    -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
    -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
    -3.53155960776544875667e-01, 1.52530022733894777053e+00};
constexpr double kK1B[] = {
    -5.75674448366501715755e-18, 1.79405087314755922667e-17,  -5.68946255844285935196e-17,
    1.83809354436663880070e-16,  -6.05704724837331885336e-16, 2.03870316562433424052e-15,
    -7.01983709041831346144e-15, 2.47715442448130437068e-14,  -8.97670518232499435011e-14,
    3.34841966607842919884e-13,  -1.28917396095102890680e-12, 5.13963967348173025100e-12,
    -2.12996783842756842877e-11, 9.21831518760500529508e-11,  -4.19035475934189648750e-10,
    2.01504975519703286596e-09,  -1.03457624656780970260e-08, 5.74108412545004946722e-08,
    -3.50196060308781257119e-07, 2.40648494783721712015e-06,  -1.93619797416608296024e-05,
    1.95215518471351631108e-04,  -2.85781685962277938680e-03, 1.03923736576817238437e-01,
    2.72062619048444266945e+00};

// exp(-|x|) I0(x) and exp(-|x|) I1(x).
inline double i0e(double x) {
  const double a = std::fabs(x);
  if (a <= 8.0) return chbevl(a / 2.0 - 2.0, kI0A);
  return chbevl(32.0 / a - 2.0, kI0B) / std::sqrt(a);
}
inline double i1e(double x) {
  const double a = std::fabs(x);
  const double r =
      a <= 8.0 ? chbevl(a / 2.0 - 2.0, kI1A) * a : chbevl(32.0 / a - 2.0, kI1B) / std::sqrt(a);
  return x < 0.0 ? -r : r;
}
inline double i0(double x) {
  const double a = std::fabs(x);
  if (a <= 8.0) return std::exp(a) * chbevl(a / 2.0 - 2.0, kI0A);
  return std::exp(a) * chbevl(32.0 / a - 2.0, kI0B) / std::sqrt(a);
}
inline double i1(double x) {
  const double a = std::fabs(x);
  const double r = a <= 8.0 ? chbevl(a / 2.0 - 2.0, kI1A) * a * std::exp(a)
                            : std::exp(a) * chbevl(32.0 / a - 2.0, kI1B) / std::sqrt(a);
  return x < 0.0 ? -r : r;
}
// K0 and K1 (scaled: times exp(x)); +inf at 0, NaN below (and for NaN).
inline double k0(double x, bool scaled) {
  if (x == 0.0) return kInf;
  if (!(x > 0.0)) return kNaN;
  if (x <= 2.0) {
    const double r = chbevl(x * x - 2.0, kK0A) - std::log(0.5 * x) * i0(x);
    return scaled ? r * std::exp(x) : r;
  }
  const double r = chbevl(8.0 / x - 2.0, kK0B) / std::sqrt(x);
  return scaled ? r : std::exp(-x) * r;
}
inline double k1(double x, bool scaled) {
  if (x == 0.0) return kInf;
  if (!(x > 0.0)) return kNaN;
  if (x <= 2.0) {
    const double r = std::log(0.5 * x) * i1(x) + chbevl(x * x - 2.0, kK1A) / x;
    return scaled ? r * std::exp(x) : r;
  }
  const double r = chbevl(8.0 / x - 2.0, kK1B) / std::sqrt(x);
  return scaled ? r : std::exp(-x) * r;
}

// ---- Bessel functions of the first and second kind ---------------------------------------------

// Hankel's asymptotic form above 5: P / Q rational in 25 / x^2 (orders 0 and 1).
constexpr double kJ0PP[] = {7.96936729297347051624e-04, 8.28352392107440799803e-02,
                            1.23953371646414299388e+00, 5.44725003058768775090e+00,
                            8.74716500199817011941e+00, 5.30324038235394892183e+00,
                            9.99999999999999997821e-01};
constexpr double kJ0PQ[] = {9.24408810558863637013e-04, 8.56288474354474431428e-02,
                            1.25352743901058953537e+00, 5.47097740330417105182e+00,
                            8.76190883237069594232e+00, 5.30605288235394617618e+00,
                            1.00000000000000000218e+00};
constexpr double kJ0QP[] = {-1.13663838898469149931e-02, -1.28252718670509318512e+00,
                            -1.95539544257735972385e+01, -9.32060152123768231369e+01,
                            -1.77681167980488050595e+02, -1.47077505154951170175e+02,
                            -5.14105326766599330220e+01, -6.05014350600728481186e+00};
constexpr double kJ0QQ[] = {6.43178256118178023184e+01, 8.56430025976980587198e+02,
                            3.88240183605401609683e+03, 7.24046774195652478189e+03,
                            5.93072701187316984827e+03, 2.06209331660327847417e+03,
                            2.42005740240291393179e+02};
constexpr double kJ1PP[] = {7.62125616208173112003e-04, 7.31397056940917570436e-02,
                            1.12719608129684925192e+00, 5.11207951146807644818e+00,
                            8.42404590141772420927e+00, 5.21451598682361504063e+00,
                            1.00000000000000000254e+00};
constexpr double kJ1PQ[] = {5.71323128072548699714e-04, 6.88455908754495404082e-02,
                            1.10514232634061696926e+00, 5.07386386128601488557e+00,
                            8.39985554327604159757e+00, 5.20982848682361821619e+00,
                            9.99999999999999997461e-01};
constexpr double kJ1QP[] = {5.10862594750176621635e-02, 4.98213872951233449420e+00,
                            7.58238284132545283818e+01, 3.66779609360150777800e+02,
                            7.10856304998926107277e+02, 5.97489612400613639965e+02,
                            2.11688757100572135698e+02, 2.52070205858023719784e+01};
constexpr double kJ1QQ[] = {7.42373277035675149943e+01, 1.05644886038262816351e+03,
                            4.98641058337653607651e+03, 9.56231892404756170795e+03,
                            7.99704160447350683650e+03, 2.82619278517639096600e+03,
                            3.36093607810698293419e+02};
// Below 5: J0, J1 / x as (x^2 - r1^2)(x^2 - r2^2) R(x^2) with their first two zeros r1, r2.
constexpr double kJ0RP[] = {-4.79443220978201773821e+09, 1.95617491946556577543e+12,
                            -2.49248344360967716204e+14, 9.70862251047306323952e+15};
constexpr double kJ0RQ[] = {4.99563147152651017219e+02, 1.73785401676374683123e+05,
                            4.84409658339962045305e+07, 1.11855537045356834862e+10,
                            2.11277520115489217587e+12, 3.10518229857422583814e+14,
                            3.18121955943204943306e+16, 1.71086294081043136091e+18};
constexpr double kJ1RP[] = {-8.99971225705559398224e+08, 4.52228297998194034323e+11,
                            -7.27494245221818276015e+13, 3.68295732863852883286e+15};
constexpr double kJ1RQ[] = {6.20836478118054335476e+02, 2.56987256757748830383e+05,
                            8.35146791431949253037e+07, 2.21511595479792499675e+10,
                            4.74914122079991414898e+12, 7.84369607876235854894e+14,
                            8.95222336184627338078e+16, 5.32278620332680085395e+18};
// Below 5: Y0 - (2 / pi) log(x) J0, (Y1 - (2 / pi)(J1 log(x) - 1 / x)) / x.
constexpr double kY0P[] = {1.55924367855235737965e+04, -1.46639295903971606143e+07,
                           5.43526477051876500413e+09, -9.82136065717911466409e+11,
                           8.75906394395366999549e+13, -3.46628303384729719441e+15,
                           4.42733268572569800351e+16, -1.84950800436986690637e+16};
constexpr double kY0Q[] = {1.04128353664259848412e+03, 6.26107330137134956842e+05,
                           2.68919633393814121987e+08, 8.64002487103935000337e+10,
                           2.02979612750105546709e+13, 3.17157752842975028269e+15,
                           2.50596256172653059228e+17};
constexpr double kY1P[] = {1.26320474790178026440e+09, -6.47355876379160291031e+11,
                           1.14509511541823727583e+14, -8.12770255501325109621e+15,
                           2.02439475713594898196e+17, -7.78877196265950026825e+17};
constexpr double kY1Q[] = {5.94301592346128195359e+02, 2.35564092943068577943e+05,
                           7.34811944459721705660e+07, 1.87601316108706159478e+10,
                           3.88231277496238566008e+12, 6.20557727146953693363e+14,
                           6.87141087355300489866e+16, 3.97270608116560655612e+18};
constexpr double kSqrt2OverPi = 0.797884560802865355879892119868763737;
constexpr double kTwoOverPi = 0.636619772367581343075535053490057448;
constexpr double kPiOver4 = 0.785398163397448309615660845819875721;
constexpr double k3PiOver4 = 2.356194490192344928846982537459627163;

// sqrt(2 / (pi x)) (P cos(x - phase) - (5 / x) Q sin(x - phase)) (J), or with sin and cos
// exchanged and the sign of the second term flipped (Y); x > 5.
inline double hankel(double x, double z, bool order1, bool second_kind) {
  const double p = order1 ? poly(z, kJ1PP) / poly(z, kJ1PQ) : poly(z, kJ0PP) / poly(z, kJ0PQ);
  const double q = order1 ? poly(z, kJ1QP) / poly(z, kJ1QQ) : poly(z, kJ0QP) / poly(z, kJ0QQ);
  const double phase = x - (order1 ? k3PiOver4 : kPiOver4);
  const double r = second_kind ? p * std::sin(phase) + 5.0 / x * q * std::cos(phase)
                               : p * std::cos(phase) - 5.0 / x * q * std::sin(phase);
  return r * kSqrt2OverPi / std::sqrt(x);
}
inline double bessel_j0(double x) {
  x = std::fabs(x);
  if (x <= 5.0) {
    const double z = x * x;
    if (x < 1e-5) return 1.0 - z / 4.0;
    return (z - 5.78318596294678452118e+00) * (z - 3.04712623436620863991e+01) * poly(z, kJ0RP) /
           poly(z, kJ0RQ);
  }
  return hankel(x, 25.0 / (x * x), false, false);
}
inline double bessel_j1(double x) {
  if (x < 0.0) return -bessel_j1(-x);
  if (x <= 5.0) {
    const double z = x * x;
    return poly(z, kJ1RP) / poly(z, kJ1RQ) * x * (z - 1.46819706421238932572e+01) *
           (z - 4.92184563216946036703e+01);
  }
  return hankel(x, 5.0 / x * (5.0 / x), true, false);
}
inline double bessel_y0(double x) {
  if (x <= 5.0) {
    if (x == 0.0) return -kInf;
    if (x < 0.0) return kNaN;
    const double z = x * x;
    return poly(z, kY0P) / poly(z, kY0Q) + kTwoOverPi * std::log(x) * bessel_j0(x);
  }
  return hankel(x, 25.0 / (x * x), false, true);
}
inline double bessel_y1(double x) {
  if (x <= 5.0) {
    if (x == 0.0) return -kInf;
    if (x <= 0.0) return kNaN;
    const double z = x * x;
    return x * (poly(z, kY1P) / poly(z, kY1Q)) +
           kTwoOverPi * (bessel_j1(x) * std::log(x) - 1.0 / x);
  }
  return hankel(x, 5.0 / x * (5.0 / x), true, true);
}
inline double spherical_bessel_j0(double x) {
  if (std::isinf(x)) return 0.0;
  if (std::fabs(x) < 0.5) {
    const double z = x * x;
    return 1.0 +
           z * (-1.0 / 6.0 +
                z * (1.0 / 120.0 +
                     z * (-1.0 / 5040.0 + z * (1.0 / 362880.0 + z * (-1.0 / 39916800.0 +
                                                                     z * (1.0 / 6227020800.0))))));
  }
  return std::sin(x) / x;
}

// ---- Airy function Ai
// ----------------------------------------------------------------------------

constexpr double kAiAN[] = {3.46538101525629032477e-01, 1.20075952739645805542e+01,
                            7.62796053615234516538e+01, 1.68089224934630576269e+02,
                            1.59756391350164413639e+02, 7.05360906840444183113e+01,
                            1.40264691163389668864e+01, 9.99999999999999995305e-01};
constexpr double kAiAD[] = {5.67594532638770212846e-01, 1.47562562584847203173e+01,
                            8.45138970141474626562e+01, 1.77318088145400459522e+02,
                            1.64234692871529701831e+02, 7.14778400825575695274e+01,
                            1.40959135607834029598e+01, 1.00000000000000000470e+00};
constexpr double kAiAFN[] = {
    -1.31696323418331795333e-01, -6.26456544431912369773e-01, -6.93158036036933542233e-01,
    -2.79779981545119124951e-01, -4.91900132609500318020e-02, -4.06265923594885404393e-03,
    -1.59276496239262096340e-04, -2.77649108155232920844e-06, -1.67787698489114633780e-08};
constexpr double kAiAFD[] = {
    1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
    9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
    4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07};
constexpr double kAiAGN[] = {
    1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
    9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
    5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
    8.11789239554389293311e-08, 3.41551784765923618484e-10};
constexpr double kAiAGD[] = {9.30892908077441974853e+00, 1.98352928718312140417e+01,
                             1.55646628932864612953e+01, 5.47686069422975497931e+00,
                             9.54293611618961883998e-01, 8.64580826352392193095e-02,
                             4.12656523824222607191e-03, 1.01259085116509135510e-04,
                             1.17166733214413521882e-06, 4.91834570062930015649e-09};
constexpr double kInvSqrtPi = 5.64189583547756286948e-01;

inline double airy_ai(double x) {
  if (std::isinf(x)) return kNaN;
  if (x > 103.892) return 0.0;
  if (x < -2.09) {
    const double zeta = -2.0 * x * std::sqrt(-x) / 3.0;
    const double z = 1.0 / zeta, zz = z * z;
    const double t = zeta + 0.25 * kPi;
    return kInvSqrtPi / std::sqrt(std::sqrt(-x)) *
           (std::sin(t) * (1.0 + zz * poly(zz, kAiAFN) / poly(zz, kAiAFD)) -
            std::cos(t) * (z * poly(zz, kAiAGN) / poly(zz, kAiAGD)));
  }
  if (x >= 2.09) {
    const double zeta = 2.0 * x * std::sqrt(x) / 3.0;
    const double u = 1.0 / zeta;
    return kInvSqrtPi * (poly(u, kAiAN) / poly(u, kAiAD)) /
           (2.0 * std::sqrt(std::sqrt(x)) * std::exp(zeta));
  }
  // Maclaurin series Ai(x) = Ai(0) f(x) + Ai'(0) g(x), with f = sum_k f_k, f_0 = 1,
  // f_(k+1) = f_k x^3 / ((3k + 2)(3k + 3)), and g = sum_k g_k, g_0 = x,
  // g_(k+1) = g_k x^3 / ((3k + 3)(3k + 4)).
  // The terms reach ~40 times the result near x = -2.09 before they cancel: summed in long
  // double (x87's 64-bit mantissa), so the double result keeps its last digits.
  const long double x3 = static_cast<long double>(x) * x * x;
  long double f = 1.0L, g = x, fk = 1.0L, gk = x;
  for (int k = 0; k < 200; ++k) {
    fk *= x3 / ((3.0L * k + 2.0L) * (3.0L * k + 3.0L));
    gk *= x3 / ((3.0L * k + 3.0L) * (3.0L * k + 4.0L));
    f += fk;
    g += gk;
    if (std::fabs(fk) <= std::fabs(f) * 1e-20L && std::fabs(gk) <= std::fabs(g) * 1e-20L + 1e-300L)
      break;
  }
  return static_cast<double>(0.355028053887817239260L * f - 0.258819403792806798405L * g);
}

// ---- erfcx, log_ndtr, ndtri -------------------------------------------------------------------

// e^{x^2} erfc(x): x^2 = hi + lo exactly, e^hi e^lo erfc(x) below 12 (erfc(12) = 1.4e-64 and
// e^144 are far inside double's range); above, the asymptotic series
// 1 / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2 x^2)^k, whose 13th term is below 1e-18.
inline double erfcx_positive(double x) {
  if (x < 12.0) {
    const double hi = x * x;
    const double lo = std::fma(x, x, -hi);
    return std::exp(hi) * std::exp(lo) * std::erfc(x);
  }
  const double w = 1.0 / (2.0 * x * x);
  double term = 1.0, sum = 1.0;
  for (int k = 1; k <= 12; ++k) {
    term *= -(2.0 * k - 1.0) * w;
    sum += term;
  }
  return sum * kInvSqrtPi / x;
}
inline double erfcx(double x) {
  if (x != x) return x;
  if (x >= 0.0) return erfcx_positive(x);
  if (x < -26.7) return kInf;
  const double hi = x * x;
  const double lo = std::fma(x, x, -hi);
  return 2.0 * (std::exp(hi) * std::exp(lo)) - erfcx_positive(-x);
}
constexpr double kSqrtHalf = 0.70710678118654752440;
inline double log_ndtr(double x) {
  const double t = x * kSqrtHalf;
  if (x < -1.0) return std::log(erfcx(-t) / 2.0) - t * t;
  return std::log1p(-std::erfc(t) / 2.0);
}
inline double ndtri(double p) {
  if (!(p >= 0.0 && p <= 1.0)) return kNaN;
  if (p == 0.0) return -kInf;
  if (p == 1.0) return kInf;
  if (p == 0.5) return 0.0;
  const bool upper = p > 0.5;
  const double q = upper ? 1.0 - p : p;  // exact (Sterbenz)
  const double t = std::sqrt(-2.0 * std::log(q));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                       (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  // Halley steps on ndtr(x) - q: ndtr' = phi, ndtr'' = -x phi. Near the middle ndtr(x) - q is
  // erf(x / sqrt 2) / 2 - (q - 1/2), both terms with full relative accuracy (q - 1/2 is exact).
  for (int i = 0; i < 3; ++i) {
    const double f =
        q >= 0.25 ? 0.5 * std::erf(x * kSqrtHalf) - (q - 0.5) : 0.5 * std::erfc(-x * kSqrtHalf) - q;
    const double u = f / (std::exp(-0.5 * x * x) * (kInvSqrtPi * kSqrtHalf));
    x -= u / (1.0 + 0.5 * x * u);
  }
  return upper ? -x : x;
}

// ---- Hurwitz zeta
// --------------------------------------------------------------------------------

// zeta(x, q) = sum_k (q + k)^-x for x > 1: the first N terms directly, then the
// Euler-Maclaurin remainder at w = q + N >= 10:
//   w^(1-x) / (x - 1) + w^-x / 2 + sum_j B_2j / (2j)! x (x + 1) ... (x + 2j - 2) w^(-x-2j+1).
// torch's values: inf at x = 1 and at the poles q = 0, -1, ...; NaN for x < 1 and for a
// negative q with a fractional x (q^-x is not real).
inline double zeta(double x, double q) {
  // B_2j / (2j)! for j = 1 .. 12.
  constexpr double kB[] = {1.0 / 12.0,
                           -1.0 / 720.0,
                           1.0 / 30240.0,
                           -1.0 / 1209600.0,
                           1.0 / 47900160.0,
                           -691.0 / 1307674368000.0,
                           1.0 / 74724249600.0,
                           -3617.0 / 10670622842880000.0,
                           43867.0 / 5109094217170944000.0,
                           -174611.0 / 802857662698291200000.0,
                           77683.0 / 14101100039391805440000.0,
                           -236364091.0 / 1693824136731743669452800000.0};
  if (x == 1.0) return kInf;  // NaN operands give NaN below, except at the poles (as torch)
  if (x < 1.0) return kNaN;
  if (q <= 0.0) {
    if (q == std::floor(q)) return kInf;
    if (x != std::floor(x)) return kNaN;
  }
  // x = inf: q^-x alone decides (inf below 1, 1 at 1); torch gives NaN above 1.
  if (std::isinf(x)) return q < 1.0 ? kInf : (q == 1.0 ? 1.0 : kNaN);
  double sum = 0.0, w = q;
  for (int k = 0; k < 9 || w < 10.0; ++k) {
    sum += std::pow(w, -x);
    w += 1.0;
  }
  const double wx = std::pow(w, -x);
  if (wx == 0.0 && std::isfinite(w)) return sum;  // the remainder underflows (x = inf too)
  sum += w * wx / (x - 1.0) + 0.5 * wx;
  double rising = x, power = wx / w;  // x (x + 1) ... (x + 2j - 2), w^(-x-2j+1)
  for (int j = 0; j < 12; ++j) {
    const double t = kB[j] * rising * power;
    sum += t;
    if (std::fabs(t) < std::fabs(sum) * 1e-17) break;
    rising *= (x + 2 * j + 1) * (x + 2 * j + 2);
    power /= w * w;
  }
  return sum;
}

// ---- orthogonal polynomials
// ----------------------------------------------------------------------

// The degree as torch takes it from a float: truncated toward zero; NaN, +-inf and values past
// int64 become negative (x86's conversion gives INT64_MIN there), so the polynomial is 0.
template <class T>
inline int64_t degree(T n) {
  if (!(n > T(-9.2e18) && n < T(9.2e18))) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(n);
}

// The three-term recurrence r = a(x, k) q - b(k) p shared by the Chebyshev kinds, from p0, p1.
template <class T>
inline T chebyshev_recurrence(T x2, T p, T q, int64_t n) {
  T r = q;
  for (int64_t k = 2; k <= n && !std::isnan(q); ++k) {
    r = x2 * q - p;
    p = q;
    q = r;
  }
  return r;
}
// Chebyshev polynomials at y (y = x for T..W, 2x - 1 for the shifted ones). trig_from: the degree
// above which |y| < 1 uses the trigonometric form (torch: 6 for T, 8 for U V W unshifted, 6 for
// shifted U V, 4 for shifted W).
template <class T>
inline T chebyshev_t(T y, int64_t n, bool shifted, T x) {
  if (n < 0) return T(0);
  if (shifted ? x == T(1) : std::fabs(y) == T(1)) return (y > T(0) || n % 2 == 0) ? T(1) : T(-1);
  if (shifted && x == T(0)) return n % 2 == 0 ? T(1) : T(-1);
  if (n > 6 && std::fabs(y) < T(1)) return std::cos(static_cast<T>(n) * std::acos(y));
  if (n == 0) return T(1);
  if (n == 1) return y;
  return chebyshev_recurrence(y + y, T(1), y, n);
}
template <class T>
inline T chebyshev_u(T y, int64_t n, bool shifted, T x) {
  if (n < 0) return T(0);
  const T n1 = static_cast<T>(n + 1);
  if (shifted ? x == T(1) : std::fabs(y) == T(1)) return (y > T(0) || n % 2 == 0) ? n1 : -n1;
  if (shifted && x == T(0)) return n % 2 == 0 ? n1 : -n1;
  if (n > (shifted ? 6 : 8) && std::fabs(y) < T(1)) {
    const T theta = std::acos(y);
    if (std::sin(theta) != T(0)) return std::sin(n1 * theta) / std::sin(theta);
    return n1 * std::cos(n1 * theta) / y;
  }
  if (n == 0) return T(1);
  if (n == 1) return y + y;
  return chebyshev_recurrence(y + y, T(1), y + y, n);
}
template <class T>
inline T chebyshev_v(T y, int64_t n, bool shifted, T x) {
  if (n < 0) return T(0);
  const T odd = static_cast<T>(n + n + 1);
  if (shifted ? x == T(1) : (std::fabs(y) == T(1) && y > T(0))) return T(1);
  if (shifted ? x == T(0) : std::fabs(y) == T(1)) return n % 2 == 0 ? odd : -odd;
  if (n > (shifted ? 6 : 8) && std::fabs(y) < T(1)) {
    const T theta = std::acos(y);
    if (std::sin(theta / T(2)) != T(1))
      return std::cos((static_cast<T>(n) + T(0.5)) * theta) / std::cos(theta / T(2));
    return n % 2 == 0 ? odd : -odd;
  }
  if (n == 0) return T(1);
  if (n == 1) return y + y - T(1);
  return chebyshev_recurrence(y + y, T(1), y + y - T(1), n);
}
template <class T>
inline T chebyshev_w(T y, int64_t n, bool shifted, T x) {
  if (n < 0) return T(0);
  const T odd = static_cast<T>(n + n + 1);
  if (shifted ? x == T(1) : (std::fabs(y) == T(1) && y > T(0))) return odd;
  if (shifted ? x == T(0) : std::fabs(y) == T(1)) return n % 2 == 0 ? T(1) : T(-1);
  if (n > (shifted ? 4 : 8) && std::fabs(y) < T(1)) {
    const T theta = std::acos(y);
    if (std::cos(theta / T(2)) != T(1))
      return std::sin((static_cast<T>(n) + T(0.5)) * theta) / std::sin(theta / T(2));
    if (!shifted && y > T(0)) return odd;
    return n % 2 == 0 ? T(1) : T(-1);
  }
  if (n == 0) return T(1);
  if (n == 1) return y + y + T(1);
  return chebyshev_recurrence(y + y, T(1), y + y + T(1), n);
}
// Hermite: NaN past degree 128 (float) or 512 (double), as torch.
template <class T>
inline T hermite_h(T x, int64_t n) {
  if (n < 0) return T(0);
  if (n == 0) return T(1);
  if (n == 1) return x + x;
  if (n > (sizeof(T) == 4 ? 128 : 512)) return std::numeric_limits<T>::quiet_NaN();
  T p = T(1), q = x + x, r = T(0);
  for (int64_t k = 2; k < n + n; k += 2) {
    r = (x + x) * q - static_cast<T>(k) * p;
    p = q;
    q = r;
  }
  return r;
}
template <class T>
inline T hermite_he(T x, int64_t n) {
  if (n < 0) return T(0);
  if (n == 0) return T(1);
  if (n == 1) return x;
  if (n > (sizeof(T) == 4 ? 128 : 512)) return std::numeric_limits<T>::quiet_NaN();
  T p = T(1), q = x, r = T(0);
  for (int64_t k = 1; k < n; ++k) {
    r = x * q - static_cast<T>(k) * p;
    p = q;
    q = r;
  }
  return r;
}
template <class T>
inline T laguerre_l(T x, int64_t n) {
  if (n < 0) return T(0);
  if (std::fabs(x) == T(0)) return T(1);
  if (n == 0) return T(1);
  if (n == 1) return T(1) - x;
  T p = T(1), q = T(1) - x, r = q;
  for (int64_t k = 1; k < n && !std::isnan(q); ++k) {
    r = ((static_cast<T>(k + k) + (T(1) - x)) * q - static_cast<T>(k) * p) / static_cast<T>(k + 1);
    p = q;
    q = r;
  }
  return r;
}
template <class T>
inline T legendre_p(T x, int64_t n) {
  if (n < 0) return T(0);
  if (std::fabs(x) == T(1)) return (x > T(0) || n % 2 == 0) ? T(1) : T(-1);
  if (n == 0) return T(1);
  if (n == 1) return x;
  T p = T(1), q = x, r = x;
  for (int64_t k = 1; k < n && !std::isnan(q); ++k) {
    r = (static_cast<T>(k + k + 1) * x * q - static_cast<T>(k) * p) / static_cast<T>(k + 1);
    p = q;
    q = r;
  }
  return r;
}

// ---- regularized incomplete gamma functions --------------------------------------------------

// P(a, x) = gamma(a, x) / Gamma(a) and Q = 1 - P for a, x > 0 (finite). Below x = a + 1, P by
// its power series x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)); above, Q by
// Legendre's continued fraction x^a e^-x / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a
// - ...)), evaluated with the modified Lentz method. The other one is 1 minus it, where it is
// not close to 1 (so no digits cancel). The prefactor is exp(a log x - x - lgamma(a)): its
// exponent loses about log10(a) digits to cancellation for large a, within 1e-9 relative up
// to a = 1e6.
inline double incgamma_prefactor(double a, double x) {
  // x^a e^-x / Gamma(a): as a product where no factor overflows or underflows (each factor
  // is rounded once), else through logarithms (whose exponent loses ~log10(a log x) digits).
  if (a < 170.0) {
    const double r = std::pow(x, a) * std::exp(-x) / std::tgamma(a);
    if (std::isnormal(r) && std::isfinite(std::pow(x, a))) return r;
  }
  return std::exp(a * std::log(x) - x - ember_rt::lgamma(a));
}
inline double incgamma_series(double a, double x) {  // P(a, x), x < a + 1
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < 100000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::fabs(term) < std::fabs(sum) * 1e-17) break;
  }
  return sum * incgamma_prefactor(a, x);
}
inline double incgamma_fraction(double a, double x) {  // Q(a, x), x >= a + 1
  constexpr double kTiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / kTiny, d = 1.0 / b, h = d;
  for (int n = 1; n < 100000; ++n) {
    const double an = -n * (n - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1.0) < 1e-16) break;
  }
  return h * incgamma_prefactor(a, x);
}
// log Gamma(1 + a) for |a| < 0.1: -gamma a + sum_k>=2 (-1)^k zeta(k) a^k / k (to a^13).
inline double lgamma1p_small(double a) {
  constexpr double kZeta[] = {1.6449340668482264, 1.2020569031595943, 1.0823232337111382,
                              1.0369277551433699, 1.0173430619844491, 1.0083492773819228,
                              1.0040773561979443, 1.0020083928260822, 1.0009945751278181,
                              1.0004941886041195, 1.0002460865533080, 1.0001227133475785};
  constexpr double kEulerGamma = 0.57721566490153286061;
  double sum = 0.0, power = a;
  for (int k = 2; k <= 13; ++k) {
    power *= -a;
    sum += kZeta[k - 2] * power / k;
  }
  return -kEulerGamma * a + sum;
}
// Q(a, x) for a < 1 and x < a + 1, where P is close to 1 and 1 - P would cancel: with
// P = x^a / Gamma(a + 1) (1 + a s), s = sum_n>=1 (-x)^n / (n! (a + n)),
//   Q = -expm1(l) - e^l a s,  l = a log x - log Gamma(1 + a).
inline double incgamma_small_a(double a, double x) {
  double term = 1.0, s = 0.0;
  for (int n = 1; n < 500; ++n) {
    term *= -x / n;
    const double t = term / (a + n);
    s += t;
    if (std::fabs(t) <= std::fabs(s) * 1e-17) break;
  }
  const double lg = a < 0.1 ? lgamma1p_small(a) : ember_rt::lgamma(1.0 + a);
  const double l = a * std::log(x) - lg;
  return -std::expm1(l) - std::exp(l) * a * s;
}
// P(a, x) in the same terms: e^l (1 + a s), which stays <= 1 where P is nearly 1.
inline double incgamma_small_a_p(double a, double x) {
  double term = 1.0, s = 0.0;
  for (int n = 1; n < 500; ++n) {
    term *= -x / n;
    const double t = term / (a + n);
    s += t;
    if (std::fabs(t) <= std::fabs(s) * 1e-17) break;
  }
  const double lg = a < 0.1 ? lgamma1p_small(a) : ember_rt::lgamma(1.0 + a);
  return std::exp(a * std::log(x) - lg) * (1.0 + a * s);
}
// For large a with x near a, Temme's uniform expansion (DLMF 8.12): with lambda = x / a,
// mu = lambda - 1 and eta = sign(mu) sqrt(2 (mu - log(1 + mu))),
//   Q(a, x) = erfc(eta sqrt(a / 2)) / 2 + e^(-a eta^2 / 2) / sqrt(2 pi a) (c0 + c1 / a),
// c0 = 1 / mu - 1 / eta and c1 = 1 / eta^3 - 1 / mu^3 - 1 / mu^2 - 1 / (12 mu), by their
// Taylor series in eta near 0 where those differences cancel. Its error is O(a^-5/2): below
// 1e-12 relative from a = 1e4, where the series and the fraction need ~1000 terms.
inline double incgamma_uniform(double a, double x) {  // Q(a, x)
  const double mu = (x - a) / a;
  const double eta = std::copysign(std::sqrt(2.0 * (mu - std::log1p(mu))), mu);
  double c0, c1;
  if (std::fabs(eta) < 0.05) {
    c0 = -1.0 / 3.0 + eta / 12.0 - 2.0 * eta * eta / 135.0 + eta * eta * eta / 864.0;
    c1 = -1.0 / 540.0 - eta / 288.0 + 25.0 * eta * eta / 6048.0;
  } else {
    c0 = 1.0 / mu - 1.0 / eta;
    c1 = 1.0 / (eta * eta * eta) - 1.0 / (mu * mu * mu) - 1.0 / (mu * mu) - 1.0 / (12.0 * mu);
  }
  constexpr double kTwoPi = 6.283185307179586476925;
  return 0.5 * std::erfc(eta * std::sqrt(0.5 * a)) +
         std::exp(-0.5 * a * eta * eta) / std::sqrt(kTwoPi * a) * (c0 + c1 / a);
}
inline bool incgamma_uniform_fits(double a, double x) {
  return a >= 1e4 && std::fabs(x - a) < 0.3 * a;
}
// torch's values at the edges of the domain, in the order it tests them (so a NaN operand
// may still give a number): NaN for a negative operand; at a = 0, P = 1 for x > 0 (else
// NaN); P = 0 at x = 0; at a = inf, P = 0 (NaN if x = inf too); P = 1 at x = inf.
inline bool incgamma_edge(double a, double x, double* p) {
  if (x < 0.0 || a < 0.0) return *p = kNaN, true;
  if (a == 0.0) return *p = x > 0.0 ? 1.0 : kNaN, true;
  if (x == 0.0) return *p = 0.0, true;
  if (std::isinf(a)) return *p = std::isinf(x) ? kNaN : 0.0, true;
  if (std::isinf(x)) return *p = 1.0, true;
  if (std::isnan(a) || std::isnan(x)) return *p = kNaN, true;
  return false;
}
inline double igamma(double a, double x) {
  double p;
  if (incgamma_edge(a, x, &p)) return p;
  if (incgamma_uniform_fits(a, x)) return 1.0 - incgamma_uniform(a, x);
  if (x >= a + 1.0) return 1.0 - incgamma_fraction(a, x);
  return a < 1.0 ? incgamma_small_a_p(a, x) : incgamma_series(a, x);
}
inline double igammac(double a, double x) {
  double p;
  if (incgamma_edge(a, x, &p)) return std::isnan(p) ? p : 1.0 - p;
  if (incgamma_uniform_fits(a, x)) return incgamma_uniform(a, x);
  if (x >= a + 1.0) return incgamma_fraction(a, x);
  return a < 1.0 ? incgamma_small_a(a, x) : 1.0 - incgamma_series(a, x);
}

}  // namespace special_detail

// ---- double versions
// -----------------------------------------------------------------------------

#define EMBER_RT_SPECIAL2_DOUBLE(name, expr) \
  inline double name(double x) { return special_detail::expr; }
EMBER_RT_SPECIAL2_DOUBLE(i0, i0(x))
EMBER_RT_SPECIAL2_DOUBLE(i0e, i0e(x))
EMBER_RT_SPECIAL2_DOUBLE(i1, i1(x))
EMBER_RT_SPECIAL2_DOUBLE(i1e, i1e(x))
EMBER_RT_SPECIAL2_DOUBLE(modified_bessel_k0, k0(x, false))
EMBER_RT_SPECIAL2_DOUBLE(modified_bessel_k1, k1(x, false))
EMBER_RT_SPECIAL2_DOUBLE(scaled_modified_bessel_k0, k0(x, true))
EMBER_RT_SPECIAL2_DOUBLE(scaled_modified_bessel_k1, k1(x, true))
EMBER_RT_SPECIAL2_DOUBLE(bessel_j0, bessel_j0(x))
EMBER_RT_SPECIAL2_DOUBLE(bessel_j1, bessel_j1(x))
EMBER_RT_SPECIAL2_DOUBLE(bessel_y0, bessel_y0(x))
EMBER_RT_SPECIAL2_DOUBLE(bessel_y1, bessel_y1(x))
EMBER_RT_SPECIAL2_DOUBLE(spherical_bessel_j0, spherical_bessel_j0(x))
EMBER_RT_SPECIAL2_DOUBLE(airy_ai, airy_ai(x))
EMBER_RT_SPECIAL2_DOUBLE(erfcx, erfcx(x))
EMBER_RT_SPECIAL2_DOUBLE(log_ndtr, log_ndtr(x))
EMBER_RT_SPECIAL2_DOUBLE(ndtri, ndtri(x))
#undef EMBER_RT_SPECIAL2_DOUBLE

inline double zeta(double x, double q) { return special_detail::zeta(x, q); }
inline double igamma(double a, double x) { return special_detail::igamma(a, x); }
inline double igammac(double a, double x) { return special_detail::igammac(a, x); }
inline double nextafter(double a, double b) { return std::nextafter(a, b); }

// The polynomials in T = float or double (torch evaluates them in the operands' dtype).
namespace special_detail {
template <class T>
inline T shifted(T x) {
  return x + x - T(1);
}
}  // namespace special_detail
#define EMBER_RT_POLYNOMIAL(name, expr) \
  namespace special_detail {            \
  template <class T>                    \
  inline T name##_t(T x, T n_float) {   \
    const int64_t n = degree(n_float);  \
    return expr;                        \
  }                                     \
  }                                     \
  inline double name(double x, double n) { return special_detail::name##_t(x, n); }
EMBER_RT_POLYNOMIAL(chebyshev_polynomial_t, chebyshev_t(x, n, false, x))
EMBER_RT_POLYNOMIAL(chebyshev_polynomial_u, chebyshev_u(x, n, false, x))
EMBER_RT_POLYNOMIAL(chebyshev_polynomial_v, chebyshev_v(x, n, false, x))
EMBER_RT_POLYNOMIAL(chebyshev_polynomial_w, chebyshev_w(x, n, false, x))
EMBER_RT_POLYNOMIAL(shifted_chebyshev_polynomial_t, chebyshev_t(shifted(x), n, true, x))
EMBER_RT_POLYNOMIAL(shifted_chebyshev_polynomial_u, chebyshev_u(shifted(x), n, true, x))
EMBER_RT_POLYNOMIAL(shifted_chebyshev_polynomial_v, chebyshev_v(shifted(x), n, true, x))
EMBER_RT_POLYNOMIAL(shifted_chebyshev_polynomial_w, chebyshev_w(shifted(x), n, true, x))
EMBER_RT_POLYNOMIAL(hermite_polynomial_h, hermite_h(x, n))
EMBER_RT_POLYNOMIAL(hermite_polynomial_he, hermite_he(x, n))
EMBER_RT_POLYNOMIAL(laguerre_polynomial_l, laguerre_l(x, n))
EMBER_RT_POLYNOMIAL(legendre_polynomial_p, legendre_p(x, n))
#undef EMBER_RT_POLYNOMIAL

// ---- float and vf entry points
// -------------------------------------------------------------------

inline namespace EMBER_RT_ISA_NS {

// Through the double version, rounded once.
#define EMBER_RT_SPECIAL2_UNARY(name)                                  \
  inline float name(float x) {                                         \
    return static_cast<float>(ember_rt::name(static_cast<double>(x))); \
  }                                                                    \
  inline vf name(vf x) {                                               \
    return detail::map_lanes(x, [](float v) { return name(v); });      \
  }
EMBER_RT_SPECIAL2_UNARY(i0)
EMBER_RT_SPECIAL2_UNARY(i0e)
EMBER_RT_SPECIAL2_UNARY(i1)
EMBER_RT_SPECIAL2_UNARY(i1e)
EMBER_RT_SPECIAL2_UNARY(modified_bessel_k0)
EMBER_RT_SPECIAL2_UNARY(modified_bessel_k1)
EMBER_RT_SPECIAL2_UNARY(scaled_modified_bessel_k0)
EMBER_RT_SPECIAL2_UNARY(scaled_modified_bessel_k1)
EMBER_RT_SPECIAL2_UNARY(bessel_j0)
EMBER_RT_SPECIAL2_UNARY(bessel_j1)
EMBER_RT_SPECIAL2_UNARY(bessel_y0)
EMBER_RT_SPECIAL2_UNARY(bessel_y1)
EMBER_RT_SPECIAL2_UNARY(spherical_bessel_j0)
EMBER_RT_SPECIAL2_UNARY(airy_ai)
EMBER_RT_SPECIAL2_UNARY(erfcx)
EMBER_RT_SPECIAL2_UNARY(log_ndtr)
EMBER_RT_SPECIAL2_UNARY(ndtri)
#undef EMBER_RT_SPECIAL2_UNARY

#define EMBER_RT_SPECIAL2_BINARY(name, float_expr)                               \
  inline float name(float a, float b) { return float_expr; }                     \
  inline vf name(vf a, vf b) {                                                   \
    return detail::map_lanes(a, b, [](float x, float y) { return name(x, y); }); \
  }
#define EMBER_RT_THROUGH_DOUBLE(name) \
  static_cast<float>(ember_rt::name(static_cast<double>(a), static_cast<double>(b)))
EMBER_RT_SPECIAL2_BINARY(zeta, EMBER_RT_THROUGH_DOUBLE(zeta))
EMBER_RT_SPECIAL2_BINARY(igamma, EMBER_RT_THROUGH_DOUBLE(igamma))
EMBER_RT_SPECIAL2_BINARY(igammac, EMBER_RT_THROUGH_DOUBLE(igammac))
EMBER_RT_SPECIAL2_BINARY(nextafter, std::nextafter(a, b))
#undef EMBER_RT_THROUGH_DOUBLE
#define EMBER_RT_POLYNOMIAL_FLOAT(name) \
  EMBER_RT_SPECIAL2_BINARY(name, special_detail::name##_t<float>(a, b))
EMBER_RT_POLYNOMIAL_FLOAT(chebyshev_polynomial_t)
EMBER_RT_POLYNOMIAL_FLOAT(chebyshev_polynomial_u)
EMBER_RT_POLYNOMIAL_FLOAT(chebyshev_polynomial_v)
EMBER_RT_POLYNOMIAL_FLOAT(chebyshev_polynomial_w)
EMBER_RT_POLYNOMIAL_FLOAT(shifted_chebyshev_polynomial_t)
EMBER_RT_POLYNOMIAL_FLOAT(shifted_chebyshev_polynomial_u)
EMBER_RT_POLYNOMIAL_FLOAT(shifted_chebyshev_polynomial_v)
EMBER_RT_POLYNOMIAL_FLOAT(shifted_chebyshev_polynomial_w)
EMBER_RT_POLYNOMIAL_FLOAT(hermite_polynomial_h)
EMBER_RT_POLYNOMIAL_FLOAT(hermite_polynomial_he)
EMBER_RT_POLYNOMIAL_FLOAT(laguerre_polynomial_l)
EMBER_RT_POLYNOMIAL_FLOAT(legendre_polynomial_p)
#undef EMBER_RT_POLYNOMIAL_FLOAT
#undef EMBER_RT_SPECIAL2_BINARY

}  // namespace EMBER_RT_ISA_NS
}  // namespace ember_rt
