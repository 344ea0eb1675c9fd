import { dominantLanguage, hasLookAlikeWords, unifyWordScripts } from "./script";

describe("unifyWordScripts", () => {
  test("Cyrillic look-alikes inside or instead of Latin words become Latin in an English block", () => {
    expect(unifyWordScripts("НЕ МОРЕО and ВЕNNЕТТ, ЕХ", "eng")).toBe("HE MOPEO and BENNETT, EX");
  });

  test("Latin look-alikes become Cyrillic in a Russian block", () => {
    expect(unifyWordScripts("OOO «Ромашка», yл. Ленина", "rus")).toBe("ООО «Ромашка», ул. Ленина");
  });

  test("a word takes the script of its letters that have no look-alike, whatever the block's", () => {
    expect(unifyWordScripts("Hеllo", "rus")).toBe("Hello");
    expect(unifyWordScripts("Жaлоба", "eng")).toBe("Жалоба");
  });

  test("words already in one script, digits and punctuation are left alone", () => {
    expect(unifyWordScripts("Договор № 17/2024 signed in Moscow, 99,914.15", "rus")).toBe("Договор № 17/2024 signed in Moscow, 99,914.15");
  });

  test("no word of the result has letters of both scripts", () => {
    const out = unifyWordScripts("ТАХI МОSCOW Рython ВОХ", "eng");
    for (const word of out.split(" ")) expect(/\p{Script=Latin}/u.test(word) && /\p{Script=Cyrillic}/u.test(word)).toBe(false);
  });
});

test("dominantLanguage and hasLookAlikeWords", () => {
  expect(dominantLanguage("Hello мир world")).toBe("eng");
  expect(dominantLanguage("Привет world")).toBe("rus");
  expect(dominantLanguage("12 345")).toBeUndefined();
  expect(hasLookAlikeWords("101,598.46 ЕХ", "eng")).toBe(true);
  expect(hasLookAlikeWords("OOO Ромашка", "rus")).toBe(true);
  // A real foreign word, with letters the other alphabet lacks, is no reason to read the block again.
  expect(hasLookAlikeWords("Hello мир", "eng")).toBe(false);
  expect(hasLookAlikeWords("ПАО Sberbank", "rus")).toBe(false);
});
