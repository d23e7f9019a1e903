// The README's "./auth.js" for this app: the tests' users (../auth.js).
export { authorize } from "../auth.js";
