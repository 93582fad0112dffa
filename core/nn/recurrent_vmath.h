/* recurrent_vmath.h - the recurrent kinds' sigmoid and tanh on vectors,
 * included by recurrent.c once per body: VF and VI a float and an int32
 * vector type of VN lanes, TARGET the body's function attribute, FN(name)
 * its names. Lane by lane the same operations whatever VN, without
 * contraction into FMAs, so every body gives the same bits. e^x is
 * Cephes' expf, tanh Cephes' tanhf (recurrent.c says how). */

/* m ? a : b, lane by lane (m all ones or all zeros) */
TARGET INLINE VF FN(vsel)(VI m, VF a, VF b)
{
	return (VF)((m & (VI)a) | (~m & (VI)b));
}

TARGET INLINE VF FN(vexp)(VF x)
{
	VF zero = { 0 }, k, r, p;
	VI bits;

	x = FN(vsel)(x < -87.0f, zero - 87.0f, x);	/* 2^k stays a normal float */
	x = FN(vsel)(x > 88.0f, zero + 88.0f, x);
	k = x * 1.44269504088896341f + 12582912.0f;	/* round(x / ln2): */
	k -= 12582912.0f;				/* the 1.5 2^23 shift */
	r = x - k * 0.693359375f;	/* ln2 in two parts: exact k ln2_hi */
	r -= k * -2.12194440e-4f;
	p = zero + 1.9875691500e-4f;
	p = p * r + 1.3981999507e-3f;
	p = p * r + 8.3334519073e-3f;
	p = p * r + 4.1665795894e-2f;
	p = p * r + 1.6666665459e-1f;
	p = p * r + 5.0000001201e-1f;
	p = p * (r * r) + r + 1.0f;
	bits = (__builtin_convertvector(k, VI) + 127) << 23;
	return p * (VF)bits;
}

TARGET INLINE VF FN(vsigmoid)(VF x)
{
	return 1.0f / (1.0f + FN(vexp)(-x));
}

TARGET INLINE VF FN(vtanh)(VF x)
{
	VI neg = x < 0.0f;
	VF a = FN(vsel)(neg, -x, x), s = x * x, small, large;

	small = ((((-5.70498872745e-3f * s + 2.06390887954e-2f) * s -
		   5.37397155531e-2f) * s + 1.33314422036e-1f) * s -
		 3.33332819422e-1f) * s * x + x;
	large = 1.0f - 2.0f / (FN(vexp)(2.0f * a) + 1.0f);
	large = FN(vsel)(neg, -large, large);
	return FN(vsel)(a < 0.625f, small, large);
}

/* v[0..n) = fn(v) in place, VN at a time, the tail through a copy. */
#define MAP_BODY(fn)                                                         \
	size_t i = 0;                                                        \
	VF x;                                                                \
	for (; i + VN <= n; i += VN) {                                        \
		memcpy(&x, v + i, sizeof(x));                                \
		x = fn(x);                                                   \
		memcpy(v + i, &x, sizeof(x));                                \
	}                                                                    \
	if (i < n) {                                                         \
		x = (VF){ 0 };                                               \
		memcpy(&x, v + i, (n - i) * sizeof(float));                  \
		x = fn(x);                                                   \
		memcpy(v + i, &x, (n - i) * sizeof(float));                  \
	}

TARGET static void FN(sigmoid)(float *v, size_t n) { MAP_BODY(FN(vsigmoid)) }
TARGET static void FN(tanh)(float *v, size_t n) { MAP_BODY(FN(vtanh)) }

#undef MAP_BODY
