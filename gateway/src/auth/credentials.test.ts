import { isAdminToken, presentedKey } from "./credentials";

describe("presented credentials", () => {
  it("takes a Bearer key, whatever the scheme's case, and x-api-key only where the route allows it", () => {
    expect(presentedKey({ authorization: "Bearer mtr_abc" }, false)).toBe("mtr_abc");
    expect(presentedKey({ authorization: "bearer mtr_abc " }, false)).toBe("mtr_abc");
    expect(presentedKey({ "x-api-key": "mtr_abc" }, false)).toBeUndefined();
    expect(presentedKey({ "x-api-key": " mtr_abc " }, true)).toBe("mtr_abc");
    expect(presentedKey({ authorization: "Basic dXNlcjpwYXNz" }, true)).toBeUndefined();
    expect(presentedKey({ authorization: "Bearer two words" }, false)).toBeUndefined();
  });

  it("recognises the admin token exactly, never a prefix or another key", () => {
    const token = "adm_0123456789abcdef";
    expect(isAdminToken({ authorization: `Bearer ${token}` }, token)).toBe(true);
    expect(isAdminToken({ authorization: `Bearer ${token}x` }, token)).toBe(false);
    expect(isAdminToken({ authorization: `Bearer ${token.slice(0, -1)}` }, token)).toBe(false);
    expect(isAdminToken({ "x-api-key": token }, token)).toBe(false);
    expect(isAdminToken({}, token)).toBe(false);
  });
});
