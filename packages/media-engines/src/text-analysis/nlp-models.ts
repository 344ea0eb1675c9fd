import { Container } from "@nlpjs/core";
import { LangRu } from "@nlpjs/lang-ru";
import { SentimentAnalyzer } from "@nlpjs/sentiment";
import { eng, rus } from "stopword";
import winkNLP, { type WinkMethods } from "wink-nlp";
import model from "wink-eng-lite-web-model";
import { importEsm } from "../esm";

type Eld = (typeof import("eld"))["eld"];
type Syllable = (typeof import("syllable"))["syllable"];

/**
 * The models text analysis uses, loaded once per process (all ship inside their npm packages):
 * wink-nlp with its English lite model (~100 ms to load), eld's medium n-gram database (ES module),
 * @nlpjs' Russian AFINN lexicon, syllable (ES module) and the stopword lists.
 */
export interface NlpModels {
  wink: WinkMethods;
  eld: Eld;
  syllable: Syllable;
  russianSentiment: SentimentAnalyzer;
  stopwords: { en: ReadonlySet<string>; ru: ReadonlySet<string> };
}

let loading: Promise<NlpModels> | undefined;

export function loadNlpModels(): Promise<NlpModels> {
  loading ??= (async () => {
    const [{ eld }, { syllable }] = await Promise.all([importEsm<typeof import("eld")>("eld/medium"), importEsm<typeof import("syllable")>("syllable")]);
    const container = new Container();
    container.use(LangRu);
    return {
      wink: winkNLP(model),
      eld,
      syllable,
      russianSentiment: new SentimentAnalyzer({ container }),
      stopwords: { en: new Set(eng), ru: new Set(rus.map((w) => w.replace(/ё/g, "е"))) },
    };
  })();
  loading.catch(() => (loading = undefined));
  return loading;
}
